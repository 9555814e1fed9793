package telemetry

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/plantstore/plantstore/internal/version"
)

// ServiceName is the default service.name; OTEL_SERVICE_NAME overrides it.
const ServiceName = "plantstore"

// Tracing is the service's tracer provider and propagator. Nothing is set
// globally: whoever traces receives these.
type Tracing struct {
	Provider   trace.TracerProvider
	Propagator propagation.TextMapPropagator
	// Exporting is false for the no-op provider.
	Exporting bool
	shutdown  func(context.Context) error
}

// Shutdown flushes buffered spans and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// NewTracing builds tracing from the standard OTEL_* environment only:
// OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER (otlp or none),
// OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _PROTOCOL (http/protobuf or grpc),
// _HEADERS, _TIMEOUT, OTEL_TRACES_SAMPLER[_ARG] (see samplerFromEnv),
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME. With no exporter endpoint
// set the provider is a no-op,
// so an unconfigured service pays almost nothing for its spans.
// W3C trace context and baggage are always propagated.
func NewTracing(ctx context.Context, info version.Info) (*Tracing, error) {
	t := &Tracing{
		Provider:   noop.NewTracerProvider(),
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return t, nil
	}
	switch exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "", "otlp":
	case "none":
		return t, nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: only otlp and none are supported", exp)
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return t, nil
	}

	sampler, err := samplerFromEnv()
	if err != nil {
		return nil, err
	}
	protocol := cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	var exporter sdktrace.SpanExporter
	switch protocol {
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP trace exporter: %w", err)
	}

	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(
			semconv.ServiceName(ServiceName),
			semconv.ServiceVersion(info.Version),
			semconv.ServiceInstanceID(instanceID()),
		),
		// Last, so that OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (where
		// the chart passes the pod, namespace and node) win.
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("building the trace resource: %w", err)
	}
	// The batch processor's settings come from OTEL_BSP_*, which the SDK
	// reads itself; the sampler from OTEL_TRACES_SAMPLER (samplerFromEnv).
	// Ended spans reach the batch processor in bursts (see coalescing).
	opts := []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(newCoalescing(newBatchProcessor(exporter))),
		sdktrace.WithResource(res), sdktrace.WithIDGenerator(idGenerator{})}
	if sampler != nil {
		opts = append(opts, sdktrace.WithSampler(sampler))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	t.Provider, t.Exporting, t.shutdown = tp, true, tp.Shutdown
	return t, nil
}

// DefaultExportBatch is the most spans one OTLP export carries unless
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE says otherwise; the SDK's default is 512.
//
// The batch processor encodes and sends a batch on its own goroutine, on
// the cores that serve requests, and a request that lands behind a large
// export waits. Exports of 64 cost as much in all as exports of 512, in
// bursts an eighth as long, which lowers the p99 at moderate load
// (docs/performance.md).
const DefaultExportBatch = 64

// newBatchProcessor is the SDK's batch span processor of exporter with
// DefaultExportBatch as its default batch size. An option overrides the
// environment in the SDK, so it is given only when the environment holds
// no batch size the SDK would take (unset, empty or not a number, which
// the SDK reads as its own 512), and, as the SDK does with its default,
// never larger than the queue (OTEL_BSP_MAX_QUEUE_SIZE).
func newBatchProcessor(exporter sdktrace.SpanExporter) sdktrace.SpanProcessor {
	var opts []sdktrace.BatchSpanProcessorOption
	if _, ok := intEnv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"); !ok {
		queue, ok := intEnv("OTEL_BSP_MAX_QUEUE_SIZE")
		if !ok {
			queue = sdktrace.DefaultMaxQueueSize
		}
		opts = append(opts, sdktrace.WithMaxExportBatchSize(min(DefaultExportBatch, queue)))
	}
	return sdktrace.NewBatchSpanProcessor(exporter, opts...)
}

// intEnv is the integer in the environment variable key, read as the SDK
// reads its OTEL_BSP_* settings: ok is false when it is unset, empty or not
// an integer.
func intEnv(key string) (n int, ok bool) {
	n, err := strconv.Atoi(os.Getenv(key))
	return n, err == nil
}

// instanceID identifies this process among the service's replicas.
func instanceID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	host, _ := os.Hostname()
	return host + "-" + hex.EncodeToString(b)
}

// idGenerator makes trace and span ids from math/rand/v2's per-thread
// generator. The SDK's default draws them under a mutex from one shared
// source, which every request contends for. Ids need to be unique, not
// unguessable.
type idGenerator struct{}

func (g idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.LittleEndian.PutUint64(tid[:8], mrand.Uint64())
		binary.LittleEndian.PutUint64(tid[8:], mrand.Uint64())
	}
	return tid, g.NewSpanID(ctx, tid)
}

func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.LittleEndian.PutUint64(sid[:], mrand.Uint64())
	}
	return sid
}

// ClientSpans wraps tp for the spans a request's outgoing calls make (a Redis
// command, say): under a parent span that records nothing it makes no span
// and hands back the parent, where tp would still build a non-recording child
// and run the sampler for every call. Nothing that would have been recorded
// is lost: every sampler OTEL_TRACES_SAMPLER can choose decides a child the
// way its parent was decided (parentbased_*; traceidratio on the same trace
// id; always_on and always_off). A call without a parent span gets tp's span.
func ClientSpans(tp trace.TracerProvider) trace.TracerProvider {
	return clientSpanProvider{tp: tp}
}

type clientSpanProvider struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (p clientSpanProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return clientSpanTracer{tracer: p.tp.Tracer(name, opts...)}
}

type clientSpanTracer struct {
	embedded.Tracer
	tracer trace.Tracer
}

func (t clientSpanTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if parent := trace.SpanFromContext(ctx); parent.SpanContext().IsValid() && !parent.IsRecording() {
		// A non-recording span's methods do nothing, End included, so the
		// caller may treat it as its own.
		return ctx, parent
	}
	return t.tracer.Start(ctx, name, opts...)
}
