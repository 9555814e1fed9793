package webhook

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/store"
)

// Policy is how deliveries are scheduled.
type Policy struct {
	// MaxAttempts is how many times a delivery is tried before it is
	// dead-lettered.
	MaxAttempts int
	// BackoffBase and BackoffMax bound the wait before a retry: after
	// attempt n (from 0) it is min(BackoffMax, BackoffBase·2^n), less a
	// random part of up to half of it (jitter).
	BackoffBase, BackoffMax time.Duration
	// Lease is how long a claimed delivery is this worker's; one not
	// settled by then (its replica died) is due again for any replica. It
	// must exceed the delivery timeout.
	Lease time.Duration
	// PollInterval is the wait between polls of an idle outbox.
	PollInterval time.Duration
	// InFlight bounds the deliveries this replica makes at once;
	// PerSubscriber those to one subscriber.
	InFlight, PerSubscriber int
	// UnknownGrace: a delivery to a subscriber this replica does not know is
	// put off while its event is younger than this (another replica may have
	// read a newer subscribers file), and dropped after (the subscriber was
	// removed). Set it above the file's reload interval.
	UnknownGrace time.Duration
}

// Backoff is the wait before the retry that follows attempt (0 for the
// first), as BackoffBase and BackoffMax say. backoff randomizes
// symmetrically about its interval, so the interval is 3/4 of the wait and
// varies by a third. The attempt count lives in the outbox, not in a
// backoff, so the schedule is stepped to it; within 63 doublings the
// interval reaches its cap.
func (p Policy) Backoff(attempt int) time.Duration {
	schedule := backoff.ExponentialBackOff{
		InitialInterval:     p.BackoffBase - p.BackoffBase/4,
		RandomizationFactor: 1.0 / 3,
		Multiplier:          2,
		MaxInterval:         p.BackoffMax - p.BackoffMax/4,
	}
	for range min(attempt, 63) {
		schedule.NextBackOff()
	}
	return schedule.NextBackOff()
}

// fanOutBatch is how many events per shard one poll fans out.
const fanOutBatch = 256

// busyDelay is how long a delivery waits when its subscriber is at its
// concurrency limit.
const busyDelay = 200 * time.Millisecond

// Worker drains the outbox: it fans recorded events out to the subscribers
// in force, claims due deliveries, sends them and settles each. Every
// replica runs one; the outbox's leases keep them from delivering one task
// twice at once.
type Worker struct {
	outbox  store.Outbox
	subs    *Subscribers
	sender  *Sender
	policy  Policy
	metrics *Metrics
	tracer  trace.Tracer
	log     *zap.Logger
	now     func() time.Time

	slots chan struct{}
	// freed wakes the loop when a delivery ends: with every slot taken it
	// waits for one, not for a poll interval.
	freed  chan struct{}
	mu     sync.Mutex
	perSub map[string]chan struct{}
}

// NewWorker returns a worker; it does nothing until Run.
func NewWorker(outbox store.Outbox, subs *Subscribers, sender *Sender, policy Policy, metrics *Metrics, tp trace.TracerProvider, log *zap.Logger) *Worker {
	return &Worker{outbox: outbox, subs: subs, sender: sender, policy: policy, metrics: metrics,
		tracer: tp.Tracer("github.com/plantstore/plantstore/internal/webhook"), log: log, now: time.Now,
		slots: make(chan struct{}, policy.InFlight), freed: make(chan struct{}, 1), perSub: map[string]chan struct{}{}}
}

// Run delivers until ctx ends, then waits for the deliveries under way
// (each bounded by the sender's timeout). It claims no more than its free
// slots and its subscribers' free slots can take (a task for a busy
// subscriber is put off again), and polls again at once while it finds
// work and has room, and otherwise when a delivery ends or PollInterval
// has passed.
func (w *Worker) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		keys := w.subs.Keys()
		if len(keys) > 0 {
			if _, err := w.outbox.FanOut(ctx, keys, fanOutBatch); err != nil && ctx.Err() == nil {
				w.log.Warn("fanning out webhook events failed; retrying", zap.Error(err))
			}
		}
		room := cap(w.slots) - len(w.slots)
		if len(keys) > 0 {
			room = min(room, w.subscriberRoom(keys))
		} // else only tasks of removed subscribers are left, to put off or drop
		var tasks []store.Task
		if room > 0 {
			var err error
			tasks, err = w.outbox.Claim(ctx, w.now(), max(1, room/store.Shards), w.policy.Lease)
			if err != nil && ctx.Err() == nil {
				w.log.Warn("claiming webhook deliveries failed; retrying", zap.Error(err))
			}
		}
		for _, t := range tasks {
			select {
			case w.slots <- struct{}{}:
			case <-ctx.Done():
				return // the rest stay leased, and come back when the lease ends
			}
			wg.Go(func() {
				defer func() {
					<-w.slots
					select {
					case w.freed <- struct{}{}:
					default:
					}
				}()
				w.deliver(context.WithoutCancel(ctx), t)
			})
		}
		if room == 0 || len(tasks) == 0 {
			select {
			case <-ctx.Done():
			case <-w.freed:
			case <-time.After(w.policy.PollInterval):
			}
		}
	}
}

// subscriberRoom is how many more deliveries the subscribers of keys can
// take from this replica at once.
func (w *Worker) subscriberRoom(keys []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := 0
	for _, k := range keys {
		if sem, ok := w.perSub[k]; ok {
			room += cap(sem) - len(sem)
		} else {
			room += w.policy.PerSubscriber
		}
	}
	return room
}

// subscriberSlot takes one of sub's delivery slots, if one is free.
func (w *Worker) subscriberSlot(key string) (release func(), ok bool) {
	w.mu.Lock()
	sem, found := w.perSub[key]
	if !found {
		sem = make(chan struct{}, w.policy.PerSubscriber)
		w.perSub[key] = sem
	}
	w.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, true
	default:
		return nil, false
	}
}

// deliver sends one claimed task and settles it. A failure to settle (the
// store is down) leaves the task leased: it is delivered again when the
// lease ends, with the same webhook-id.
func (w *Worker) deliver(ctx context.Context, t store.Task) {
	sub, ok := w.subs.ByKey(t.Subscriber)
	if !ok && w.now().Sub(t.Event.Time) < w.policy.UnknownGrace {
		w.settle(w.outbox.Defer(ctx, t, w.now().Add(w.policy.UnknownGrace/4)), t)
		return
	}
	if !ok {
		w.log.Info("webhook delivery dropped: its subscriber is no longer in the file",
			zap.String("webhook_id", t.Event.ID), zap.String("subscriber_key", t.Subscriber))
		w.metrics.delivered("removed", OutcomeUnsubscribed)
		w.settle(w.outbox.Done(ctx, t), t)
		return
	}
	release, ok := w.subscriberSlot(sub.Key)
	if !ok {
		w.settle(w.outbox.Defer(ctx, t, w.now().Add(busyDelay)), t)
		return
	}
	defer release()

	var links []trace.Link
	if t.Event.TraceParent != "" {
		origin := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": t.Event.TraceParent})
		if sc := trace.SpanContextFromContext(origin); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	ctx, span := w.tracer.Start(ctx, "webhook "+t.Event.Type, trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...),
		trace.WithAttributes(
			attribute.String("webhook.id", t.Event.ID),
			attribute.String("webhook.subscriber", sub.Name),
			attribute.Int("webhook.attempt", t.Attempt+1),
			attribute.Int64("plant.id", t.Event.Plant.ID),
		))
	defer span.End()

	start := w.now()
	status, err := w.sender.Send(ctx, sub, t.Event, start)
	w.metrics.observe(sub.Name, w.now().Sub(start))
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if err == nil {
		w.metrics.delivered(sub.Name, OutcomeDelivered)
		w.settle(w.outbox.Done(ctx, t), t)
		return
	}
	span.SetStatus(codes.Error, err.Error())
	cause := err.Error()
	if t.Attempt+1 >= w.policy.MaxAttempts {
		w.metrics.delivered(sub.Name, OutcomeDeadLettered)
		w.log.Warn("webhook delivery dead-lettered", zap.String("webhook_id", t.Event.ID), zap.String("subscriber", sub.Name),
			zap.Int("attempts", t.Attempt+1), zap.String("cause", cause))
		w.settle(w.outbox.Bury(ctx, t, cause), t)
		return
	}
	wait := w.policy.Backoff(t.Attempt)
	w.metrics.delivered(sub.Name, OutcomeRetry)
	w.log.Debug("webhook delivery failed; retrying", zap.String("webhook_id", t.Event.ID), zap.String("subscriber", sub.Name),
		zap.Int("attempt", t.Attempt+1), zap.Duration("retry_in", wait), zap.String("cause", cause))
	w.settle(w.outbox.Retry(ctx, t, cause, w.now().Add(wait)), t)
}

func (w *Worker) settle(err error, t store.Task) {
	if err != nil && !errors.Is(err, context.Canceled) {
		w.log.Warn("settling a webhook delivery failed; it is delivered again when its lease ends",
			zap.String("webhook_id", t.Event.ID), zap.Error(err))
	}
}

// RunStats refreshes the backlog metrics every interval until ctx ends.
func (w *Worker) RunStats(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if s, err := w.outbox.Stats(ctx); err == nil {
			w.metrics.stats(s, w.now())
		} else if ctx.Err() == nil {
			w.log.Debug("reading the webhook backlog failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
