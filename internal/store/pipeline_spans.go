package store

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// pipelineSpans gives a pipeline a client span under its request's, named
// redis.pipeline and its commands' names, as redisotel's pipeline hook
// would; TraceCommands turns that hook off. redisotel spells every
// pipeline out (rediscmd.CmdsString: each command with its arguments)
// before it asks the tracer for a span, and its filter cannot see the
// request's context to skip the unsampled ones: on a page of GET /plants
// (16 ZRANGEs, then MGET) that was 7 % of the service's CPU, for a span
// that nine requests in ten never record. This hook does nothing unless
// the request's span records.
//
// A Batcher's pipelines (batchPipeline) get none: the batcher spans each
// of their commands itself. Nor does a pipeline that redisotel's default
// filter refuses (AUTH, or HELLO with credentials).
type pipelineSpans struct {
	tracer trace.Tracer
	opts   []trace.SpanStartOption // kind and the server's attributes, built once
}

func newPipelineSpans(tp trace.TracerProvider, addr string) pipelineSpans {
	attrs := []attribute.KeyValue{attribute.String("db.system", "redis")}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		attrs = append(attrs, attribute.String("server.address", host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	}
	return pipelineSpans{
		tracer: tp.Tracer("github.com/plantstore/plantstore/internal/store"),
		opts:   []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)},
	}
}

func (h pipelineSpans) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h pipelineSpans) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h pipelineSpans) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !trace.SpanFromContext(ctx).IsRecording() || batchPipeline(ctx) || slices.ContainsFunc(cmds, redisotel.DefaultCommandFilter) {
			return next(ctx, cmds)
		}
		ctx, span := h.tracer.Start(ctx, "redis.pipeline "+commandNames(cmds),
			append(h.opts, trace.WithAttributes(attribute.Int("db.redis.num_cmd", len(cmds))))...)
		defer span.End()
		err := next(ctx, cmds)
		if err != nil && !errors.Is(err, redis.Nil) {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		return err
	}
}

// commandNames lists the names of cmds' commands, each once, in order.
func commandNames(cmds []redis.Cmder) string {
	var b strings.Builder
	seen := make(map[string]bool, 4)
	for _, cmd := range cmds {
		name := cmd.Name()
		if seen[name] {
			continue
		}
		seen[name] = true
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(name)
	}
	return b.String()
}
