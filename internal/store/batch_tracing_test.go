package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/telemetry"
)

// TestBatchTracing: with batching, every Redis span descends from the span
// of a request whose command it carried: each sampled request's command has
// a client span of its own under the request's span, one of them leads the
// pipeline, the others link to it, the client library adds no pipeline span,
// and an unsampled request makes no span. No Redis span is a root. On a single
// node, with a batch of mixed sampled and unsampled requests forced (Redis
// stopped while they queue), and on a Cluster under concurrent requests.
func TestBatchTracing(t *testing.T) {
	t.Run("single node", func(t *testing.T) {
		srv := redistest.Start(t)
		client := newClient(t, store.RedisOptions{Addrs: []string{srv.Addr}})
		starts := make(pipelineStarts, 1)
		client.AddHook(starts)
		rec, tp := tracedClient(t, client)
		r, b, _ := batched(t, client, store.BatchOptions{InFlight: 1, Tracer: telemetry.ClientSpans(tp)})
		// Dial on an unsampled request: a command sent alone, then a
		// pipeline (go-redis keeps pipelines on a pool of their own).
		if _, _, err := r.Create(unsampled(99), plant.Plant{ID: 1000, Name: "warm"}); err != nil {
			t.Fatal(err)
		}
		<-starts
		if _, err := client.Pipelined(unsampled(98), func(p redis.Pipeliner) error { return p.Ping(unsampled(98)).Err() }); err != nil {
			t.Fatal(err)
		}
		<-starts
		warm := len(rec.Ended())

		reqs := newRequests(tp, 21)
		rest := make([]func(), 0, 20)
		for i := 1; i <= 20; i++ {
			rest = append(rest, reqs.op(t, r, i))
		}
		wg := stallBatch(t, srv, b, starts, reqs.op(t, r, 0), rest)
		srv.Resume()
		if got := <-starts; got != 20 {
			t.Fatalf("the 20 queued requests left in a pipeline of %d", got)
		}
		wg.Wait()
		spans := rec.Ended()[warm:]
		reqs.check(t, spans)
		// The batch of 20: the first sampled request in it leads it, and
		// the other sampled commands link to its span. The pipeline gets
		// no span of its own (batchPipeline).
		first := reqs.spans[0].SpanContext().TraceID()
		var lead sdktrace.ReadOnlySpan
		for _, s := range spans {
			if s.SpanContext().TraceID() == first {
				continue
			}
			if strings.HasPrefix(s.Name(), "redis.pipeline") {
				t.Errorf("a pipeline span %q for the batch's pipeline: its commands have theirs", s.Name())
			}
			if attrOf(s, "db.operation.batch.size").AsInt64() > 0 && len(s.Links()) == 0 {
				if lead != nil {
					t.Fatalf("two lead spans: %q and %q", lead.Name(), s.Name())
				}
				lead = s
			}
		}
		if lead == nil {
			t.Fatal("no lead span in the batch of 20")
		}
		linked := 0
		for _, s := range spans {
			if s.SpanContext().TraceID() != first && len(s.Links()) == 1 &&
				s.Links()[0].SpanContext.SpanID() == lead.SpanContext().SpanID() {
				linked++
			}
		}
		if want := 20/2 - 1; linked != want { // the even requests are sampled, but the lead
			t.Errorf("%d command spans link to the lead's, want %d", linked, want)
		}
		if size := attrOf(lead, "db.operation.batch.size"); size.AsInt64() != 20 {
			t.Errorf("the lead's batch size attribute = %v, want 20", size)
		}
	})

	t.Run("cluster", func(t *testing.T) {
		cluster := redistest.StartCluster(t, 3)
		client := newClient(t, store.RedisOptions{Addrs: cluster.Addrs(), Cluster: true})
		rec, tp := tracedClient(t, client)
		r, _, _ := batched(t, client, store.BatchOptions{Tracer: telemetry.ClientSpans(tp)})
		// Discover the nodes and dial each on an unsampled request: go-redis
		// asks a Cluster for its slots on contexts of its own.
		for s := range store.Shards {
			if _, _, err := r.Create(unsampled(99), plant.Plant{ID: int64(1000 + s), Name: "warm"}); err != nil {
				t.Fatal(err)
			}
		}
		warm := len(rec.Ended())
		reqs := newRequests(tp, 64)
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Go(reqs.op(t, r, i))
		}
		wg.Wait()
		reqs.check(t, rec.Ended()[warm:])
	})
}

func tracedClient(t *testing.T, client redis.UniversalClient) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	if err := store.TraceCommands(client, tp); err != nil {
		t.Fatal(err)
	}
	return rec, tp
}

// unsampled is the context of a request whose span records nothing.
func unsampled(i byte) context.Context {
	return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0xee, i}, SpanID: trace.SpanID{0xee, i}}))
}

// requests are n requests: the odd ones unsampled, the even ones sampled
// (their spans from tp); each creates plant i, or reads it when i%4 == 2.
type requests struct {
	ctxs  []context.Context
	spans []trace.Span
}

func newRequests(tp trace.TracerProvider, n int) *requests {
	r := &requests{ctxs: make([]context.Context, n), spans: make([]trace.Span, n)}
	for i := range n {
		if i%2 == 1 {
			r.ctxs[i] = unsampled(byte(i))
			r.spans[i] = trace.SpanFromContext(r.ctxs[i])
			continue
		}
		r.ctxs[i], r.spans[i] = tp.Tracer("test").Start(context.Background(), "request")
	}
	return r
}

func (q *requests) op(t *testing.T, r *store.Redis, i int) func() {
	return func() {
		defer q.spans[i].End()
		var err error
		if i%4 == 2 {
			_, err = r.Get(q.ctxs[i], int64(i))
			if err != nil && strings.Contains(err.Error(), plant.ErrNotFound.Error()) {
				err = nil
			}
		} else {
			_, _, err = r.Create(q.ctxs[i], plant.Plant{ID: int64(i), Name: "p"})
		}
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
}

// check: every span is a request's or descends from one, in its trace; each
// sampled request has one client span, its command's; unsampled requests
// have none.
func (q *requests) check(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	request := map[trace.SpanID]int{}
	for i, s := range q.spans {
		request[s.SpanContext().SpanID()] = i
	}
	commands := make([]int, len(q.spans))
	for _, s := range spans {
		if _, ok := request[s.SpanContext().SpanID()]; ok {
			continue
		}
		// Walk up to a request's span.
		at, hops := s, 0
		for {
			parent := at.Parent()
			if !parent.IsValid() {
				t.Errorf("span %q is a root (via %d parents)", s.Name(), hops)
				break
			}
			if parent.TraceID() != s.SpanContext().TraceID() {
				t.Errorf("span %q: parent in another trace", s.Name())
				break
			}
			if i, ok := request[parent.SpanID()]; ok {
				if hops == 0 {
					commands[i]++
					if s.SpanKind() != trace.SpanKindClient || attrOf(s, "db.system").AsString() != "redis" {
						t.Errorf("request %d's command span %q: kind %v, db.system %q", i, s.Name(), s.SpanKind(), attrOf(s, "db.system").AsString())
					}
				}
				if i%2 == 1 {
					t.Errorf("span %q under unsampled request %d", s.Name(), i)
				}
				break
			}
			next, ok := byID[parent.SpanID()]
			if !ok {
				t.Errorf("span %q: parent %v is neither a request's nor a recorded span", s.Name(), parent.SpanID())
				break
			}
			at, hops = next, hops+1
		}
	}
	for i, n := range commands {
		if want := 1 - i%2; n != want {
			t.Errorf("request %d (sampled %v): %d command spans, want %d", i, i%2 == 0, n, want)
		}
	}
}

func attrOf(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	set := attribute.NewSet(s.Attributes()...)
	v, _ := set.Value(attribute.Key(key))
	return v
}
