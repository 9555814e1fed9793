package telemetry

import (
	"context"
	"os"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestClientSpans: under every sampler the environment can choose, the
// wrapped provider records exactly the client spans the SDK would, and makes
// none under a parent that records nothing.
func TestClientSpans(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{
		{"always_on", sdktrace.AlwaysSample()},
		{"always_off", sdktrace.NeverSample()},
		{"traceidratio", sdktrace.TraceIDRatioBased(0.5)},
		{"parentbased_always_on", sdktrace.ParentBased(sdktrace.AlwaysSample())},
		{"parentbased_always_off", sdktrace.ParentBased(sdktrace.NeverSample())},
		{"parentbased_traceidratio", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.5))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			direct, wrapped := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
			directTP := sdktrace.NewTracerProvider(sdktrace.WithSampler(tc.sampler), sdktrace.WithSpanProcessor(direct))
			wrappedTP := sdktrace.NewTracerProvider(sdktrace.WithSampler(tc.sampler), sdktrace.WithSpanProcessor(wrapped))
			server := directTP.Tracer("server")
			clientDirect := directTP.Tracer("client")
			clientWrapped := ClientSpans(wrappedTP).Tracer("client")

			const requests = 200
			skipped := 0
			for range requests {
				ctx, span := server.Start(context.Background(), "request", trace.WithSpanKind(trace.SpanKindServer))
				_, d := clientDirect.Start(ctx, "SET")
				d.End()
				cctx, w := clientWrapped.Start(ctx, "SET")
				if w.SpanContext().SpanID() == span.SpanContext().SpanID() {
					skipped++
					if span.IsRecording() {
						t.Fatal("no client span under a recording parent")
					}
					if cctx != ctx {
						t.Fatal("a skipped client span changed the context")
					}
				}
				w.End()
				if !span.SpanContext().IsSampled() && span.IsRecording() {
					t.Fatal("unexpected record-only span")
				}
				span.End()
			}
			var directClients int
			for _, s := range direct.Ended() {
				if s.Name() == "SET" {
					directClients++
				}
			}
			if got := len(wrapped.Ended()); got != directClients {
				t.Errorf("wrapped provider recorded %d client spans, the SDK alone %d", got, directClients)
			}
			if want := requests - directClients; skipped != want {
				t.Errorf("skipped %d client spans, want one for each of the %d unrecorded requests", skipped, want)
			}
		})
	}

	t.Run("no parent", func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		_, span := ClientSpans(tp).Tracer("client").Start(context.Background(), "PING")
		span.End()
		if len(rec.Ended()) != 1 {
			t.Errorf("%d spans without a parent, want the SDK's own", len(rec.Ended()))
		}
	})
}

// batchSizes is an exporter that records how many spans each export carried.
type batchSizes struct {
	mu    sync.Mutex
	sizes []int
}

func (b *batchSizes) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sizes = append(b.sizes, len(spans))
	return nil
}

func (b *batchSizes) Shutdown(context.Context) error { return nil }

// TestBatchProcessorExportBatch: without OTEL_BSP_MAX_EXPORT_BATCH_SIZE an
// export carries at most DefaultExportBatch spans; with it, the
// environment's size applies, larger or smaller.
func TestBatchProcessorExportBatch(t *testing.T) {
	for _, tc := range []struct {
		env  string // "": unset
		want int    // the largest export
	}{
		{"", DefaultExportBatch},
		{"200", 200},
		{"10", 10},
	} {
		t.Run("env="+tc.env, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", tc.env)
			} else {
				t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "") // restored after the test
				os.Unsetenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
			}
			// An hour's delay: only a full batch or the flush exports.
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
			exp := &batchSizes{}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newBatchProcessor(exp)))
			tracer := tp.Tracer("test")
			const spans = 500
			for range spans {
				_, s := tracer.Start(context.Background(), "span")
				s.End()
			}
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			exp.mu.Lock()
			defer exp.mu.Unlock()
			total, largest := 0, 0
			for _, n := range exp.sizes {
				total += n
				largest = max(largest, n)
			}
			if total != spans {
				t.Fatalf("exported %d spans in %v, want %d", total, exp.sizes, spans)
			}
			if largest != tc.want {
				t.Fatalf("largest export %d spans (all: %v), want %d", largest, exp.sizes, tc.want)
			}
		})
	}
}
