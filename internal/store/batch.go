package store

import (
	"context"
	"errors"
	"slices"
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
	// InFlight: pipelines sent at once (default DefaultBatchInFlight, or
	// the client's pool size if smaller: each sender holds a connection). A
	// command that finds them all busy waits for at most one round trip
	// before it is sent.
	InFlight int
	// ReadInFlight: a read (Read) is sent at once only while fewer
	// pipelines than this are in flight, and queues otherwise (default
	// DefaultBatchReadInFlight; never more than InFlight).
	ReadInFlight int
	// MaxBatch: most commands in one pipeline (default 128).
	MaxBatch int
	// Tracer makes a client span per batched command, a child of its
	// request's span (nil: none). The service passes its provider
	// wrapped in telemetry.ClientSpans.
	Tracer trace.TracerProvider
}

// Batcher coalesces the single commands that many requests issue at once
// into one pipeline per round trip (--redis-batch): fewer write and read
// system calls on both sides than one round trip per command.
//
// It is flat combining, with no goroutine of its own: a command that finds
// fewer than InFlight pipelines on the way (ReadInFlight for a read) is sent
// at once, alone, on its caller's goroutine, as without batching: at low
// load batching costs no hand-off between goroutines. Otherwise it queues;
// when a pipeline is answered, its sender hands its place to the first
// queued caller, which sends whatever is queued by the time it runs (up to
// MaxBatch) in one pipeline. There is no timer. Reads queue sooner than
// writes (DefaultBatchReadInFlight says why), so a write may be sent at once
// while reads wait: they go in the next pipeline any sender leads.
//
// A command whose request's context is done before it is sent is not sent;
// a caller whose context ends while its batch is in flight returns at once
// with the context's error, as with the plain path (ContextTimeoutEnabled):
// its command may still be executed, and a retry of a create replays it.
// The caller that sends a pipeline waits for it, at most until the latest
// deadline among its commands.
//
// Tracing: a command sent alone gets the client library's span, a child of
// its request's. In a pipeline every command gets a client span of its own
// under its own request's span (Tracer); the pipeline runs on the context
// (values, not cancellation) of one of them, its lead, sampled if one is,
// and the others' spans link to the lead's, which carries the batch's size.
// The store's command spans skip these pipelines (commandSpans,
// batchPipeline). No command's span is a root.
type Batcher struct {
	client       redis.UniversalClient
	inFlight     int
	readInFlight int
	maxBatch     int
	tracer       trace.Tracer // nil: no spans of its own
	size         prometheus.Observer

	mu      sync.Mutex
	queue   []*batchItem // waiting for a sender: only while ReadInFlight (reads) or InFlight are busy
	senders int          // pipelines (or lone commands) being sent
	closed  bool
	idle    sync.WaitGroup // one per sender
}

type batchItem struct {
	ctx  context.Context
	cmd  redis.Cmder
	done chan struct{} // closed once cmd holds its result
	// lead is closed when the item's caller is handed a sender's place: it
	// is then off the queue and sends the next pipeline.
	lead  chan struct{}
	state itemState // under Batcher.mu
}

type itemState uint8

const (
	queued  itemState = iota
	leading           // handed a sender's place, not yet sending
	taken             // in a pipeline
)

// DefaultBatchInFlight is the pipelines a Batcher sends at once unless told
// otherwise. Fewer batch more but make more commands wait; 16 ran creates
// closest to the floor (docs/performance.md). Reads do better with fewer:
// they have their own limit, DefaultBatchReadInFlight.
const DefaultBatchInFlight = 16

// DefaultBatchReadInFlight is the pipelines in flight beyond which a read
// queues unless told otherwise. A GET costs Redis far less than a create's
// script, so its round trip is mostly system calls on both sides, which a
// shared pipeline saves (docs/performance.md).
const DefaultBatchReadInFlight = 4

// NewBatcher returns a Batcher of client and registers
// plantstore_redis_batch_size on reg. Close stops it.
func NewBatcher(client redis.UniversalClient, o BatchOptions, reg prometheus.Registerer) (*Batcher, error) {
	if o.InFlight <= 0 {
		o.InFlight = min(DefaultBatchInFlight, poolSize(client))
	}
	if o.ReadInFlight <= 0 {
		o.ReadInFlight = DefaultBatchReadInFlight
	}
	o.ReadInFlight = min(o.ReadInFlight, o.InFlight)
	if o.MaxBatch <= 0 {
		o.MaxBatch = 128
	}
	size := prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "plantstore", Subsystem: "redis", Name: "batch_size",
		Help:    "Commands per pipeline sent by the Redis batcher (--redis-batch); 1 for a command sent alone.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 8),
	})
	if err := reg.Register(size); err != nil {
		return nil, err
	}
	b := &Batcher{
		client:       client,
		inFlight:     o.InFlight,
		readInFlight: o.ReadInFlight,
		maxBatch:     o.MaxBatch,
		size:         size,
	}
	if o.Tracer != nil {
		b.tracer = o.Tracer.Tracer("github.com/plantstore/plantstore/internal/store")
	}
	return b, nil
}

// poolSize is the connections client keeps per Redis node.
func poolSize(client redis.UniversalClient) int {
	n := 0
	switch c := client.(type) {
	case *redis.Client:
		n = c.Options().PoolSize
	case *redis.ClusterClient:
		n = c.Options().PoolSize
	}
	if n <= 0 {
		return DefaultBatchInFlight
	}
	return n
}

// Close makes the commands not yet sent, and every later one, fail with
// redis.ErrClosed, and returns once the pipelines in flight are answered.
func (b *Batcher) Close() error {
	b.mu.Lock()
	b.closed = true
	queue := b.queue
	b.queue = nil
	b.mu.Unlock()
	for _, it := range queue {
		it.cmd.SetErr(redis.ErrClosed)
		close(it.done)
	}
	b.idle.Wait()
	return nil
}

// Do sends cmd, alone or in a pipeline, and waits for its result, or for
// ctx to end. It returns nil once cmd holds its result (its error
// included), and otherwise why it has none: ctx's error when ctx ended
// first (cmd must not be read then: it may still be written to), or
// redis.ErrClosed.
func (b *Batcher) Do(ctx context.Context, cmd redis.Cmder) error {
	return b.do(ctx, cmd, b.inFlight)
}

// Read is Do for a command that only reads: it queues once ReadInFlight
// pipelines are in flight.
func (b *Batcher) Read(ctx context.Context, cmd redis.Cmder) error {
	return b.do(ctx, cmd, b.readInFlight)
}

// do is Do, sending cmd at once while fewer than limit pipelines are in
// flight.
func (b *Batcher) do(ctx context.Context, cmd redis.Cmder, limit int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		return redis.ErrClosed
	case b.senders < limit: // send at once, even past queued reads
		b.senders++
		b.idle.Add(1)
		b.mu.Unlock()
		b.size.Observe(1)
		_ = b.client.Process(ctx, cmd)
		b.release()
		return nil
	}
	it := &batchItem{ctx: ctx, cmd: cmd, done: make(chan struct{}), lead: make(chan struct{})}
	b.queue = append(b.queue, it)
	b.mu.Unlock()

	select {
	case <-it.done:
		return nil
	case <-it.lead:
		b.lead(it)
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	switch it.state {
	case queued:
		b.queue = slices.DeleteFunc(b.queue, func(q *batchItem) bool { return q == it })
		b.mu.Unlock()
		return ctx.Err()
	case leading: // pass the place on rather than send a pipeline late
		b.mu.Unlock()
		it.cmd.SetErr(ctx.Err())
		b.release()
		return ctx.Err()
	}
	b.mu.Unlock()
	select {
	case <-it.done: // answered at the same time: the answer wins
		return nil
	default:
		return ctx.Err()
	}
}

// lead sends the pipeline of first, the caller handed a sender's place,
// and of whatever else is queued, then passes the place on.
func (b *Batcher) lead(first *batchItem) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		first.cmd.SetErr(redis.ErrClosed)
		b.release()
		return
	}
	n := min(len(b.queue), b.maxBatch-1)
	batch := make([]*batchItem, 0, n+1)
	batch = append(batch, first)
	batch = append(batch, b.queue[:n]...)
	for _, it := range batch {
		it.state = taken
	}
	b.queue = slices.Delete(b.queue, 0, n)
	b.mu.Unlock()
	b.send(batch)
	b.release()
	for _, it := range batch[1:] {
		close(it.done)
	}
}

// release gives a sender's place to the first queued caller, or frees it.
func (b *Batcher) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) > 0 {
		next := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		next.state = leading
		close(next.lead)
		return
	}
	b.senders--
	b.idle.Done()
}

// send sends the commands of batch's items whose contexts are not done, in
// one pipeline (alone when only one is), and leaves answering the items to
// the caller.
func (b *Batcher) send(batch []*batchItem) {
	live := liveItems(batch)
	switch len(live) {
	case 0:
		return
	case 1: // as if sent at once: its own context, the client's span
		b.size.Observe(1)
		_ = b.client.Process(live[0].ctx, live[0].cmd)
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
	ctx := context.WithValue(context.WithoutCancel(live[lead].ctx), batchPipelineKey{}, true)
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
	}
}

// liveItems returns the items of batch whose contexts are not done (batch
// itself when all are); the others' commands fail with their contexts'
// errors, never sent.
func liveItems(batch []*batchItem) []*batchItem {
	var live []*batchItem // nil until an item is dropped
	for i, it := range batch {
		err := it.ctx.Err()
		switch {
		case err == nil && live != nil:
			live = append(live, it)
		case err != nil:
			it.cmd.SetErr(err)
			if live == nil {
				live = append(make([]*batchItem, 0, len(batch)), batch[:i]...)
			}
		}
	}
	if live == nil {
		return batch
	}
	return live
}

// startSpans starts a client span per item under its own request's span;
// the pipeline runs under the lead's (*ctx), so that what go-redis traces
// on its way (a new connection's handshake) is in the lead's trace. An
// item whose context has no span (no request) gets none: it would be a
// root.
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

// batchPipelineKey marks the context a Batcher's pipeline runs on.
type batchPipelineKey struct{}

// batchPipeline tells whether ctx is that of a Batcher's pipeline, whose
// commands the batcher spans itself: commandSpans makes it no span.
func batchPipeline(ctx context.Context) bool {
	marked, _ := ctx.Value(batchPipelineKey{}).(bool)
	return marked
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
	if err := r.batch.Read(ctx, cmd); err != nil {
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
