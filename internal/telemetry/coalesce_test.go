package telemetry

import (
	"context"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// shutdownRecorder is a span recorder that remembers being shut down.
type shutdownRecorder struct {
	*tracetest.SpanRecorder
	mu   sync.Mutex
	down bool
}

func (r *shutdownRecorder) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.down = true
	r.mu.Unlock()
	return r.SpanRecorder.Shutdown(ctx)
}

func coalescingFixture(t *testing.T) (*coalescing, *shutdownRecorder, func(n int)) {
	t.Helper()
	next := &shutdownRecorder{SpanRecorder: tracetest.NewSpanRecorder()}
	c := newCoalescing(next)
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(c)).Tracer("test")
	end := func(n int) {
		for range n {
			_, span := tracer.Start(context.Background(), "op")
			span.End()
		}
	}
	return c, next, end
}

// TestCoalescingHandsOnFullBursts: spans reach the batch processor when a
// burst fills, not one by one.
func TestCoalescingHandsOnFullBursts(t *testing.T) {
	_, next, end := coalescingFixture(t)
	end(coalesceBurst - 1)
	if n := len(next.Ended()); n != 0 {
		t.Fatalf("%d spans handed on before the burst filled, want 0", n)
	}
	end(1)
	if n := len(next.Ended()); n != coalesceBurst {
		t.Fatalf("%d spans handed on when the burst filled, want %d", n, coalesceBurst)
	}
}

// TestCoalescingHandsOnAfterTheDelay: a burst that never fills is handed on
// after coalesceDelay, so a quiet server's spans are exported too.
func TestCoalescingHandsOnAfterTheDelay(t *testing.T) {
	_, next, end := coalescingFixture(t)
	end(3)
	deadline := time.Now().Add(10 * coalesceDelay)
	for len(next.Ended()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 spans handed on %v after they ended, want all after %v", len(next.Ended()), 10*coalesceDelay, coalesceDelay)
		}
		time.Sleep(coalesceDelay / 10)
	}
	end(2) // and the timer serves the next burst as well
	deadline = time.Now().Add(10 * coalesceDelay)
	for len(next.Ended()) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 5 spans handed on, want the second burst's after %v too", len(next.Ended()), coalesceDelay)
		}
		time.Sleep(coalesceDelay / 10)
	}
}

// TestCoalescingFlushAndShutdown: ForceFlush and Shutdown hand on every span
// held before they reach the batch processor, which is then shut down.
func TestCoalescingFlushAndShutdown(t *testing.T) {
	c, next, end := coalescingFixture(t)
	end(3)
	if err := c.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(next.Ended()); n != 3 {
		t.Fatalf("%d spans handed on by ForceFlush, want 3", n)
	}
	end(2)
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(next.Ended()); n != 5 || !next.down {
		t.Fatalf("after Shutdown %d spans handed on (want 5), batch processor shut down: %v", n, next.down)
	}
}

// TestCoalescingConcurrentEnds: spans ended from many goroutines at once are
// each handed on exactly once.
func TestCoalescingConcurrentEnds(t *testing.T) {
	c, next, end := coalescingFixture(t)
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() { end(each) })
	}
	wg.Wait()
	if err := c.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range next.Ended() {
		id := s.SpanContext().SpanID().String()
		if seen[id] {
			t.Fatalf("span %s handed on twice", id)
		}
		seen[id] = true
	}
	if len(seen) != goroutines*each {
		t.Fatalf("%d spans handed on, want %d", len(seen), goroutines*each)
	}
}
