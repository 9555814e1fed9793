package telemetry

import (
	"context"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// coalesceBurst and coalesceDelay bound how long an ended span waits before
// it reaches the batch processor: 64 spans or 100 ms, whichever comes first.
// The batch processor itself then waits up to OTEL_BSP_SCHEDULE_DELAY (5 s by
// default) before it exports, so the extra wait is immaterial.
const (
	coalesceBurst = 64
	coalesceDelay = 100 * time.Millisecond
)

// coalescing hands ended spans to next (the SDK's batch processor) in bursts.
// The batch processor sends every ended span over a channel to its own
// goroutine; on a server that is not saturated that goroutine is parked, so
// each span costs a scheduler wake-up, more CPU than the span's export. In
// bursts, one wake-up serves a burst (docs/performance.md).
type coalescing struct {
	next  sdktrace.SpanProcessor
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
	timer *time.Timer // flushes a burst that does not fill within coalesceDelay
}

func newCoalescing(next sdktrace.SpanProcessor) *coalescing {
	c := &coalescing{next: next, spans: make([]sdktrace.ReadOnlySpan, 0, coalesceBurst)}
	c.timer = time.AfterFunc(time.Hour, c.flush)
	c.timer.Stop()
	return c
}

// OnStart implements sdktrace.SpanProcessor.
func (c *coalescing) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { c.next.OnStart(ctx, s) }

// OnEnd implements sdktrace.SpanProcessor.
func (c *coalescing) OnEnd(s sdktrace.ReadOnlySpan) {
	c.mu.Lock()
	c.spans = append(c.spans, s)
	n := len(c.spans)
	c.mu.Unlock()
	switch n {
	case 1:
		c.timer.Reset(coalesceDelay)
	case coalesceBurst:
		c.flush()
	}
}

// flush hands the spans held to next.
func (c *coalescing) flush() {
	c.mu.Lock()
	spans := c.spans
	c.spans = make([]sdktrace.ReadOnlySpan, 0, coalesceBurst)
	c.mu.Unlock()
	for _, s := range spans {
		c.next.OnEnd(s)
	}
}

// ForceFlush implements sdktrace.SpanProcessor.
func (c *coalescing) ForceFlush(ctx context.Context) error {
	c.flush()
	return c.next.ForceFlush(ctx)
}

// Shutdown implements sdktrace.SpanProcessor: the spans held go to next
// before it shuts down.
func (c *coalescing) Shutdown(ctx context.Context) error {
	c.timer.Stop()
	c.flush()
	return c.next.Shutdown(ctx)
}
