package store

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// commandSpans gives a command, or a pipeline, a client span under its
// request's, as redisotel's hooks would: a command's span is named after
// it, a pipeline's redis.pipeline and its commands' names, each with the
// node's address and port and never the command's arguments (they hold
// plant data).
//
// It replaces redisotel's hooks because they do their work before asking
// the tracer for a span, and their filters cannot see the request's
// context to skip the unsampled requests: the pipeline hook spelt every
// pipeline out, the command hook allocated its attributes and options, for
// spans that nine requests in ten never record (docs/performance.md). This
// hook does nothing unless the request's span records; a command outside
// any request (the outbox relay's polling, the readiness probe's PING) gets
// no span, rather than a trace of its own.
//
// A Batcher's pipelines (batchPipeline) get none: the batcher spans each
// of their commands itself. Nor does a command that redisotel's default
// filter refuses (AUTH, or HELLO with credentials), or PING.
type commandSpans struct {
	tracer trace.Tracer
	opts   []trace.SpanStartOption // kind and the server's attributes, built once
}

func newCommandSpans(tp trace.TracerProvider, addr string) commandSpans {
	attrs := []attribute.KeyValue{attribute.String("db.system", "redis")}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		attrs = append(attrs, attribute.String("server.address", host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	}
	return commandSpans{
		tracer: tp.Tracer("github.com/plantstore/plantstore/internal/store"),
		opts:   []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)},
	}
}

// DialHook makes no span: go-redis 9.23 dials pooled connections on a
// background context of its own (pool.queuedNewConn), in no request.
func (h commandSpans) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h commandSpans) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !trace.SpanFromContext(ctx).IsRecording() || untraced(cmd) {
			return next(ctx, cmd)
		}
		ctx, span := h.tracer.Start(ctx, cmd.FullName(), h.opts...)
		err := next(ctx, cmd)
		endSpan(span, err)
		return err
	}
}

func (h commandSpans) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !trace.SpanFromContext(ctx).IsRecording() || batchPipeline(ctx) || slices.ContainsFunc(cmds, untraced) {
			return next(ctx, cmds)
		}
		ctx, span := h.tracer.Start(ctx, "redis.pipeline "+commandNames(cmds),
			append(h.opts, trace.WithAttributes(attribute.Int("db.redis.num_cmd", len(cmds))))...)
		err := next(ctx, cmds)
		endSpan(span, err)
		return err
	}
}

// untraced: AUTH and HELLO with credentials (redisotel's default filter),
// and PING, which the readiness probe sends every few seconds.
func untraced(cmd redis.Cmder) bool {
	return cmd.Name() == "ping" || redisotel.DefaultCommandFilter(cmd)
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
