package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// BatchOptions configure a Batcher. Zero values select the defaults.
type BatchOptions struct {
	// Workers: pipelines in flight at once (default 4). Each worker sends
	// one pipeline at a time, so a command waits for at most one round
	// trip of its worker before it is sent.
	Workers int
	// MaxBatch: most commands in one pipeline (default 128).
	MaxBatch int
	// Tracer makes a client span per batched command, a child of its
	// request's span (nil: none). The service passes the provider
	// TraceCommands traces the client with (telemetry.ClientSpans).
	Tracer trace.TracerProvider
}

// Batcher coalesces the single commands that many requests issue at once
// into one pipeline per round trip (--redis-batch): fewer write and read
// system calls on both sides than one round trip per command.
//
// A worker waits for a first command, then takes whatever else is queued
// without waiting (up to MaxBatch), and sends them in one pipeline. There is
// no timer: at low load a batch of one leaves at once. A command whose
// request's context is done before it is sent is not sent; a caller whose
// context ends while its batch is in flight returns at once with the
// context's error, as with the plain path (ContextTimeoutEnabled): its
// command may still be executed, and a retry of a create replays it.
//
// Tracing: a pipeline runs on the context (values, not cancellation) of
// one of its commands, sampled if one is, so that the client library's
// pipeline span is a child of that request's; every batched command gets a
// client span of its own under its own request's span (Tracer), linked to
// the one the pipeline ran under. No command's span is a root.
type Batcher struct {
	client   redis.UniversalClient
	queue    chan *batchItem
	maxBatch int
	tracer   trace.Tracer // nil: no spans of its own
	size     prometheus.Observer

	stop    chan struct{}
	exited  chan struct{} // closed once every worker returned
	workers sync.WaitGroup
	once    sync.Once
}

type batchItem struct {
	ctx  context.Context
	cmd  redis.Cmder
	done chan struct{} // closed once cmd holds its result
}

// NewBatcher starts the workers of a Batcher of client and registers
// plantstore_redis_batch_size on reg. Close stops them.
func NewBatcher(client redis.UniversalClient, o BatchOptions, reg prometheus.Registerer) (*Batcher, error) {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 128
	}
	size := prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "plantstore", Subsystem: "redis", Name: "batch_size",
		Help:    "Commands per pipeline sent by the Redis batcher (--redis-batch).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 8),
	})
	if err := reg.Register(size); err != nil {
		return nil, err
	}
	b := &Batcher{
		client:   client,
		queue:    make(chan *batchItem, o.Workers*o.MaxBatch),
		maxBatch: o.MaxBatch,
		size:     size,
		stop:     make(chan struct{}),
		exited:   make(chan struct{}),
	}
	if o.Tracer != nil {
		b.tracer = o.Tracer.Tracer("github.com/plantstore/plantstore/internal/store")
	}
	b.workers.Add(o.Workers)
	for range o.Workers {
		go b.work()
	}
	go func() {
		b.workers.Wait()
		close(b.exited)
	}()
	return b, nil
}

// Close stops the workers once their pipelines in flight are answered;
// commands not yet sent fail with redis.ErrClosed.
func (b *Batcher) Close() error {
	b.once.Do(func() { close(b.stop) })
	<-b.exited
	return nil
}

// Do sends cmd in the next pipeline and waits for its result, or for ctx to
// end. It returns nil once cmd holds its result (its error included), and
// otherwise why it has none: ctx's error when ctx ended first (cmd must not
// be read then: it may still be written to), or redis.ErrClosed.
func (b *Batcher) Do(ctx context.Context, cmd redis.Cmder) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	it := &batchItem{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	select {
	case b.queue <- it:
	case <-ctx.Done():
		return ctx.Err()
	case <-b.stop:
		return redis.ErrClosed
	}
	var err error
	select {
	case <-it.done:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-b.exited: // queued after the last worker took its last batch
		err = redis.ErrClosed
	}
	select {
	case <-it.done: // answered at the same time: the answer wins
		return nil
	default:
		return err
	}
}

func (b *Batcher) work() {
	defer b.workers.Done()
	batch := make([]*batchItem, 0, b.maxBatch)
	for {
		select {
		case it := <-b.queue:
			batch = append(batch[:0], it)
		case <-b.stop:
			return
		}
	drain:
		for len(batch) < b.maxBatch {
			select {
			case it := <-b.queue:
				batch = append(batch, it)
			default:
				break drain
			}
		}
		b.send(batch)
		clear(batch) // let the items' contexts and commands go
	}
}

// send sends the items whose contexts are not done in one pipeline, and
// answers every item.
func (b *Batcher) send(batch []*batchItem) {
	live := batch[:0] // filtered in place
	for _, it := range batch {
		if err := it.ctx.Err(); err != nil {
			it.cmd.SetErr(err) // never sent
			close(it.done)
			continue
		}
		live = append(live, it)
	}
	if len(live) == 0 {
		return
	}
	b.size.Observe(float64(len(live)))

	lead := 0
	for i, it := range live {
		if trace.SpanContextFromContext(it.ctx).IsSampled() {
			lead = i
			break
		}
	}
	// The lead's values (its span), without its cancellation: one request's
	// deadline must not fail the others' commands. The pipeline may last as
	// long as the latest deadline; without one, the client's timeouts bound it.
	ctx := context.WithoutCancel(live[lead].ctx)
	spans := b.startSpans(live, lead, &ctx)
	if d, ok := latestDeadline(live); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	_, _ = b.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, it := range live {
			_ = pipe.Process(ctx, it.cmd)
		}
		return nil
	})
	for i, it := range live {
		if spans != nil {
			endSpan(spans[i], it.cmd.Err())
		}
		close(it.done)
	}
}

// startSpans starts a client span per item under its own request's span;
// the lead's becomes the parent of the pipeline's (*ctx). An item whose
// context has no span (no request) gets none: it would be a root.
func (b *Batcher) startSpans(live []*batchItem, lead int, ctx *context.Context) []trace.Span {
	if b.tracer == nil {
		return nil
	}
	spans := make([]trace.Span, len(live))
	noop := trace.SpanFromContext(context.Background())
	for i := range spans {
		spans[i] = noop
	}
	attrs := trace.WithAttributes(attribute.String("db.system", "redis"),
		attribute.Int("db.operation.batch.size", len(live)))
	var links []trace.Link
	if trace.SpanContextFromContext(*ctx).IsValid() {
		var span trace.Span
		*ctx, span = b.tracer.Start(*ctx, live[lead].cmd.Name(), trace.WithSpanKind(trace.SpanKindClient), attrs)
		spans[lead] = span
		if span.IsRecording() {
			links = []trace.Link{{SpanContext: span.SpanContext()}}
		}
	}
	for i, it := range live {
		if i == lead || !trace.SpanContextFromContext(it.ctx).IsValid() {
			continue
		}
		_, spans[i] = b.tracer.Start(it.ctx, it.cmd.Name(), trace.WithSpanKind(trace.SpanKindClient), attrs,
			trace.WithLinks(links...))
	}
	return spans
}

func endSpan(span trace.Span, err error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// latestDeadline is the latest of the items' deadlines; false when one of
// them has none.
func latestDeadline(items []*batchItem) (time.Time, bool) {
	var latest time.Time
	for _, it := range items {
		d, ok := it.ctx.Deadline()
		if !ok {
			return time.Time{}, false
		}
		if d.After(latest) {
			latest = d
		}
	}
	return latest, true
}

// runScript runs script through the batcher: EVALSHA in a pipeline,
// and when the node does not know the script (NOSCRIPT: flushed, or a
// restarted or newly promoted node) EVAL on the plain path, which loads it
// (nothing of the script ran, so running it again is safe).
func (r *Redis) runScript(ctx context.Context, script *redis.Script, keys []string, args []any) *redis.Cmd {
	if r.batch == nil {
		return script.Run(ctx, r.client, keys, args...)
	}
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, "evalsha", script.Hash(), len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	if err := r.batch.Do(ctx, cmd); err != nil {
		failed := redis.NewCmd(ctx)
		failed.SetErr(err)
		return failed
	}
	if unknownScript([]redis.Cmder{cmd}) {
		return script.Eval(ctx, r.client, keys, args...)
	}
	return cmd
}

// get reads key, through the batcher when there is one.
func (r *Redis) get(ctx context.Context, key string) *redis.StringCmd {
	if r.batch == nil {
		return r.client.Get(ctx, key)
	}
	cmd := redis.NewStringCmd(ctx, "get", key)
	if err := r.batch.Do(ctx, cmd); err != nil {
		failed := redis.NewStringCmd(ctx)
		failed.SetErr(err)
		return failed
	}
	return cmd
}

// Batch makes the creates without replica acknowledgements, the deletes
// without them and the reads of single plants go through b (--redis-batch);
// nil: one round trip per command. The creates and deletes that wait for
// replicas keep their own pipelines (WaitForReplicas).
func (r *Redis) Batch(b *Batcher) *Redis {
	r.batch = b
	return r
}
