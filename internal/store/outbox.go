package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/plantstore/plantstore/internal/plant"
)

// The event types of contract section 11.
const (
	EventCreated = "plant.created"
	EventDeleted = "plant.deleted"
)

// Recording says whether changes record events in the outbox: on while at
// least one webhook subscriber is configured, so that a deployment without
// webhooks pays nothing on its create and delete paths. A nil *Recording is
// off. The webhook package sets it whenever the subscribers file is (re)read.
type Recording struct{ on atomic.Bool }

// NewRecording returns a switch, off.
func NewRecording() *Recording { return &Recording{} }

// Set turns recording on or off.
func (r *Recording) Set(on bool) { r.on.Store(on) }

// On reports whether changes record events.
func (r *Recording) On() bool { return r != nil && r.on.Load() }

// Event is a change recorded in the outbox, in the same atomic step as the
// change itself.
type Event struct {
	// ID is the event's webhook-id ("msg_" and 32 hex digits), the same on
	// every delivery of the event to every subscriber.
	ID   string
	Type string
	// Time is when the change was made (the store's clock of the replica
	// that made it).
	Time  time.Time
	Plant plant.Plant
	// TraceParent is the W3C traceparent of the request that made the
	// change ("" when it had no span), so that a delivery's span links to it.
	TraceParent string
}

// eventRecord is an event's envelope as the outbox keeps it. The plant goes
// beside it as the JSON the store keeps (storedPlant), which the delete
// script reads from the plant key it removes.
type eventRecord struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Time        string `json:"time"`
	PlantID     int64  `json:"pid"`
	TraceParent string `json:"tp,omitempty"`
}

// newEventRecord encodes the envelope of an event about plant id made now
// under ctx.
func newEventRecord(ctx context.Context, typ string, id int64) ([]byte, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("event id: %w", err)
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	rec := eventRecord{ID: "msg_" + hex.EncodeToString(b[:]), Type: typ,
		Time: time.Now().UTC().Format(time.RFC3339Nano), PlantID: id, TraceParent: carrier.Get("traceparent")}
	return json.Marshal(rec)
}

func decodeEvent(envelope, stored []byte) (Event, error) {
	var rec eventRecord
	if err := json.Unmarshal(envelope, &rec); err != nil {
		return Event{}, fmt.Errorf("decoding an outbox event: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, rec.Time)
	if err != nil {
		return Event{}, fmt.Errorf("outbox event %s: %w", rec.ID, err)
	}
	p, err := decodePlant(rec.PlantID, stored)
	if err != nil {
		return Event{}, fmt.Errorf("outbox event %s: %w", rec.ID, err)
	}
	return Event{ID: rec.ID, Type: rec.Type, Time: t, Plant: p, TraceParent: rec.TraceParent}, nil
}

// Task is the delivery of one event to one subscriber: each subscriber's
// deliveries have their own task, attempts and schedule, so a failing
// subscriber never causes a redelivery to another.
type Task struct {
	Event      Event
	Subscriber string // the subscriber's key (webhook.Subscriber.Key)
	// Attempt counts the deliveries tried before this one.
	Attempt int
	// LastError says why the last attempt failed ("" before the first).
	LastError string
	// Shard is the outbox shard holding the task.
	Shard  int
	member string // the stored form, which settles exactly the task claimed
}

// taskRecord is a task as the outbox keeps it: a member of a shard's task
// sorted set, scored by when it is next due. The fan-out script writes its
// first form by concatenation ({"s":..,"a":0,"e":..,"p":..}); every change
// goes through Go.
type taskRecord struct {
	Sub     string          `json:"s"`
	Attempt int             `json:"a"`
	Event   json.RawMessage `json:"e"`
	Plant   json.RawMessage `json:"p"`
	Err     string          `json:"err,omitempty"`
}

func decodeTask(shard int, member string) (Task, error) {
	var rec taskRecord
	if err := json.Unmarshal([]byte(member), &rec); err != nil {
		return Task{}, fmt.Errorf("decoding an outbox task: %w", err)
	}
	ev, err := decodeEvent(rec.Event, rec.Plant)
	if err != nil {
		return Task{}, err
	}
	return Task{Event: ev, Subscriber: rec.Sub, Attempt: rec.Attempt, LastError: rec.Err, Shard: shard, member: member}, nil
}

// next returns the stored form of t's next attempt, which failed with cause.
func (t Task) next(cause string) (string, error) {
	return t.rewrite(func(rec *taskRecord) { rec.Attempt, rec.Err = rec.Attempt+1, cause })
}

// fresh returns the stored form of t as a first attempt (a replay).
func (t Task) fresh() (string, error) {
	return t.rewrite(func(rec *taskRecord) { rec.Attempt, rec.Err = 0, "" })
}

// rewrite returns the stored form of t as change leaves it.
func (t Task) rewrite(change func(*taskRecord)) (string, error) {
	var rec taskRecord
	if err := json.Unmarshal([]byte(t.member), &rec); err != nil {
		return "", fmt.Errorf("decoding an outbox task: %w", err)
	}
	change(&rec)
	b, err := json.Marshal(rec)
	return string(b), err
}

// DeadLetter is a task given up after its last attempt.
type DeadLetter struct {
	// ID names the dead letter for Replay.
	ID     string
	Failed time.Time
	Task
}

// OutboxStats is what the outbox holds, for the backlog metrics.
type OutboxStats struct {
	// Events recorded and not yet fanned out to their subscribers' tasks.
	Events int64
	// Tasks waiting for a first delivery or a retry, or being delivered.
	Tasks int64
	// DeadLetters kept for an operator.
	DeadLetters int64
	// Oldest is when the oldest event still waiting (recorded, or the task
	// due first) was made; zero when nothing waits.
	Oldest time.Time
}

// Outbox is the durable queue behind the webhooks (docs/webhooks.md). A
// change records its event atomically with itself; FanOut turns each event
// into one task per subscriber; workers Claim due tasks for a lease (a task
// not settled when its lease ends is due again, for any replica) and settle
// each with Done, Retry or Bury. Every settling is conditional on the task
// still being the one claimed, so a task reclaimed after a lease ran out is
// settled once.
type Outbox interface {
	// FanOut moves up to n recorded events of each shard into one task per
	// subscriber key, due now, and returns how many events it moved.
	FanOut(ctx context.Context, subscribers []string, n int) (int, error)
	// Claim leases up to n tasks per shard that are due at now, until
	// now+lease.
	Claim(ctx context.Context, now time.Time, n int, lease time.Duration) ([]Task, error)
	// Done removes a delivered (or abandoned) task.
	Done(ctx context.Context, t Task) error
	// Retry replaces t by its next attempt, due at at.
	Retry(ctx context.Context, t Task, cause string, at time.Time) error
	// Defer makes t due again at at, as the same attempt (its subscriber
	// was busy).
	Defer(ctx context.Context, t Task, at time.Time) error
	// Bury moves t, which failed with cause, to the dead letters.
	Bury(ctx context.Context, t Task, cause string) error
	// DeadLetters returns up to limit dead letters, oldest first.
	DeadLetters(ctx context.Context, limit int) ([]DeadLetter, error)
	// Replay makes the dead letters named by ids (every one when ids is
	// empty) due now as first attempts, and returns how many it replayed.
	Replay(ctx context.Context, ids []string) (int, error)
	Stats(ctx context.Context) (OutboxStats, error)
}
