package store_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
)

// TestTraceCommands: a command of a sampled request gets a client span, a
// child of the request's, naming the node it went to and not the command's
// arguments; a command of an unsampled request gets none; PING is never
// traced. On a single node and on a Cluster, whose nodes go-redis
// instruments as it discovers them.
func TestTraceCommands(t *testing.T) {
	single := redistest.Start(t)
	cluster := redistest.StartCluster(t, 3)
	for _, tc := range []struct {
		name  string
		addrs []string
	}{
		{"single node", []string{single.Addr}},
		{"cluster", cluster.Addrs()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			traced, err := store.NewRedisClient(store.RedisOptions{Addrs: tc.addrs, Cluster: len(tc.addrs) > 1,
				DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = traced.Close() })
			rec := tracetest.NewSpanRecorder()
			// Sampled or not as the request's span says, as the service's
			// parentbased samplers decide.
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			if err := store.TraceCommands(traced, tp); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()

			// A request that is not sampled: its span is valid but records nothing.
			unsampled := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}))
			// Its command dials the connections and discovers the Cluster's
			// nodes, before the sampled request. go-redis dials and asks a
			// Cluster for its slots on contexts of its own, in no request:
			// they make no spans either.
			if err := traced.Set(unsampled, "trace:{x}:2", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			// go-redis keeps pipelines on connections of their own.
			if _, err := traced.Pipelined(unsampled, func(p redis.Pipeliner) error {
				p.Get(unsampled, "trace:{x}:2")
				p.ZRange(unsampled, "trace:{x}:z", 0, -1)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if c, ok := traced.(*redis.ClusterClient); ok { // PING goes to any node
				if err := c.ForEachShard(unsampled, func(ctx context.Context, node *redis.Client) error {
					return node.Ping(ctx).Err()
				}); err != nil {
					t.Fatal(err)
				}
			}
			// Nor do a command and a pipeline outside any request (the
			// outbox relay's polling).
			if err := traced.Get(ctx, "trace:{x}:2").Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := traced.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Get(ctx, "trace:{x}:2")
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if spans := rec.Ended(); len(spans) != 0 {
				t.Fatalf("commands of no sampled request made spans: %v", names(spans))
			}

			sampled, request := tp.Tracer("test").Start(ctx, "POST /plants")
			if err := traced.Set(sampled, "trace:{x}:1", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := traced.Ping(sampled).Err(); err != nil {
				t.Fatal(err)
			}
			// A pipeline such as a page's gets a span (commandSpans); so
			// does one of GETs alone: only a Batcher's pipelines, marked by
			// their context, go without (TestBatchTracing).
			if _, err := traced.Pipelined(sampled, func(p redis.Pipeliner) error {
				p.Get(sampled, "trace:{x}:1")
				p.ZRange(sampled, "trace:{x}:z", 0, -1)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := traced.Pipelined(sampled, func(p redis.Pipeliner) error {
				p.Get(sampled, "trace:{x}:1")
				p.Get(sampled, "trace:{x}:2")
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			request.End()
			spans := inTrace(rec.Ended(), request.SpanContext().TraceID())
			if len(spans) != 4 || spans[1].Name() != "redis.pipeline get zrange" || spans[2].Name() != "redis.pipeline get" {
				t.Fatalf("spans %q, want the request's, one for SET (PING is not traced), \"redis.pipeline get zrange\" and \"redis.pipeline get\"", names(spans))
			}
			if p := spans[1]; p.SpanKind() != trace.SpanKindClient || p.Parent().SpanID() != request.SpanContext().SpanID() ||
				attrOf(p, "db.system").AsString() != "redis" || attrOf(p, "db.redis.num_cmd").AsInt64() != 2 {
				t.Errorf("pipeline span: kind %v, parent %v, db.system %q, db.redis.num_cmd %d: want a client span of 2 commands under the request's",
					p.SpanKind(), p.Parent().SpanID(), attrOf(p, "db.system").AsString(), attrOf(p, "db.redis.num_cmd").AsInt64())
			}
			set := spans[0]
			if set.Name() != "set" || set.SpanKind() != trace.SpanKindClient ||
				set.Parent().SpanID() != request.SpanContext().SpanID() || set.SpanContext().TraceID() != request.SpanContext().TraceID() {
				t.Fatalf("span %q, kind %v, parent %v: want a client span \"set\" under the request's", set.Name(), set.SpanKind(), set.Parent().SpanID())
			}
			attrs := attribute.NewSet(set.Attributes()...)
			host, _ := attrs.Value("server.address")
			port, _ := attrs.Value("server.port")
			if node := net.JoinHostPort(host.String(), port.String()); !slices.Contains(tc.addrs, node) {
				t.Errorf("server.address and server.port name %s, not one of the nodes %v", node, tc.addrs)
			}
			if stmt, ok := attrs.Value("db.statement"); ok {
				t.Errorf("db.statement %q: the command's arguments hold plant data", stmt.AsString())
			}
		})
	}
}

func inTrace(spans []sdktrace.ReadOnlySpan, id trace.TraceID) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanContext().TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
