package telemetry

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

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

func (b *batchSizes) all() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.sizes...)
}

// TestBatchProcessorExportBatch: an export carries at most
// DefaultExportBatch spans unless OTEL_BSP_MAX_EXPORT_BATCH_SIZE holds a
// number, which then applies, larger or smaller; an empty or malformed
// value, which the SDK ignores, leaves DefaultExportBatch.
func TestBatchProcessorExportBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  *string // nil: unset
		want int     // the largest export
	}{
		{"unset", nil, DefaultExportBatch},
		{"empty", ptr(""), DefaultExportBatch},
		{"malformed", ptr("lots"), DefaultExportBatch},
		{"200", ptr("200"), 200},
		{"10", ptr("10"), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", tc.env)
			setEnv(t, "OTEL_BSP_MAX_QUEUE_SIZE", nil)
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
			sizes := exp.all()
			total, largest := 0, 0
			for _, n := range sizes {
				total += n
				largest = max(largest, n)
			}
			if total != spans {
				t.Fatalf("exported %d spans in %v, want %d", total, sizes, spans)
			}
			if largest != tc.want {
				t.Fatalf("largest export %d spans (all: %v), want %d", largest, sizes, tc.want)
			}
		})
	}
}

// TestBatchProcessorExportBatchWithinQueue: a queue smaller than
// DefaultExportBatch bounds the batch, as the SDK bounds its own default: a
// full queue's spans go out without waiting for the batch delay.
func TestBatchProcessorExportBatchWithinQueue(t *testing.T) {
	const queue = 16
	setEnv(t, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", nil)
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", strconv.Itoa(queue))
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	exp := &batchSizes{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newBatchProcessor(exp)))
	defer tp.Shutdown(context.Background())
	tracer := tp.Tracer("test")
	for range queue { // no more than the queue holds: none is dropped
		_, s := tracer.Start(context.Background(), "span")
		s.End()
	}
	// With a batch larger than the queue nothing would go out before the
	// hour's delay or Shutdown.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if sizes := exp.all(); len(sizes) > 0 {
			if sizes[0] != queue {
				t.Fatalf("first export %d spans (all: %v), want %d", sizes[0], sizes, queue)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no export of %d spans, the queue's size, within 10s: the batch is larger than the queue", queue)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ptr(s string) *string { return &s }

// setEnv sets key to *v, or unsets it for nil, and restores it after the test.
func setEnv(t *testing.T, key string, v *string) {
	t.Helper()
	t.Setenv(key, "") // registers the restore
	if v == nil {
		os.Unsetenv(key)
		return
	}
	os.Setenv(key, *v)
}
