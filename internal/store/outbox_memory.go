package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// MemoryOutbox is the embedded store's outbox: the same queue as the Redis
// one (recorded events, per-subscriber tasks scored by when they are due,
// dead letters), in the process. It is as durable as the embedded store: not
// at all. It is one shard (0).
type MemoryOutbox struct {
	mu       sync.Mutex
	events   []memoryEntry
	tasks    map[string]time.Time // member -> due
	dead     []memoryDead
	deadSeq  int64
	deadKept int
}

type memoryEntry struct{ envelope, value []byte }

type memoryDead struct {
	id     string
	member string
	failed time.Time
}

// record appends an event; the store calls it inside the critical section
// of the change.
func (o *MemoryOutbox) record(envelope, value []byte) {
	o.mu.Lock()
	o.events = append(o.events, memoryEntry{envelope, value})
	o.mu.Unlock()
}

// FanOut implements Outbox.
func (o *MemoryOutbox) FanOut(_ context.Context, subscribers []string, n int) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	moved := min(n, len(o.events))
	now := time.Now()
	for _, e := range o.events[:moved] {
		for _, s := range subscribers {
			o.tasks[firstTask(s, string(e.envelope), string(e.value))] = now
		}
	}
	o.events = slices.Delete(o.events, 0, moved)
	return moved, nil
}

// firstTask is the stored form of a first attempt, exactly as the Redis
// fan-out script concatenates it.
func firstTask(sub, envelope, value string) string {
	return `{"s":"` + sub + `","a":0,"e":` + envelope + `,"p":` + value + `}`
}

// Claim implements Outbox.
func (o *MemoryOutbox) Claim(_ context.Context, now time.Time, n int, lease time.Duration) ([]Task, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	type due struct {
		member string
		at     time.Time
	}
	var ready []due
	for m, at := range o.tasks {
		if !at.After(now) {
			ready = append(ready, due{m, at})
		}
	}
	slices.SortFunc(ready, func(a, b due) int { return a.at.Compare(b.at) })
	ready = ready[:min(n, len(ready))]
	tasks := make([]Task, 0, len(ready))
	for _, d := range ready {
		t, err := decodeTask(0, d.member)
		if err != nil {
			delete(o.tasks, d.member) // cannot ever be delivered
			return tasks, err
		}
		o.tasks[d.member] = now.Add(lease)
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// Done implements Outbox.
func (o *MemoryOutbox) Done(_ context.Context, t Task) error {
	o.mu.Lock()
	delete(o.tasks, t.member)
	o.mu.Unlock()
	return nil
}

// Retry implements Outbox.
func (o *MemoryOutbox) Retry(_ context.Context, t Task, cause string, at time.Time) error {
	next, err := t.next(cause)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.tasks[t.member]; ok {
		delete(o.tasks, t.member)
		o.tasks[next] = at
	}
	return nil
}

// Defer implements Outbox.
func (o *MemoryOutbox) Defer(_ context.Context, t Task, at time.Time) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.tasks[t.member]; ok {
		o.tasks[t.member] = at
	}
	return nil
}

// Bury implements Outbox.
func (o *MemoryOutbox) Bury(_ context.Context, t Task, cause string) error {
	last, err := t.next(cause)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.tasks[t.member]; !ok {
		return nil
	}
	delete(o.tasks, t.member)
	o.deadSeq++
	o.dead = append(o.dead, memoryDead{id: "0-" + strconv.FormatInt(o.deadSeq, 10), member: last, failed: time.Now()})
	if len(o.dead) > o.deadKept {
		o.dead = slices.Delete(o.dead, 0, len(o.dead)-o.deadKept)
	}
	return nil
}

// DeadLetters implements Outbox.
func (o *MemoryOutbox) DeadLetters(_ context.Context, limit int) ([]DeadLetter, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]DeadLetter, 0, min(limit, len(o.dead)))
	for _, d := range o.dead[:min(limit, len(o.dead))] {
		t, err := decodeTask(0, d.member)
		if err != nil {
			return nil, err
		}
		out = append(out, DeadLetter{ID: d.id, Failed: d.failed, Task: t})
	}
	return out, nil
}

// Replay implements Outbox.
func (o *MemoryOutbox) Replay(_ context.Context, ids []string) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	replayed := 0
	var kept []memoryDead
	for _, d := range o.dead {
		if len(ids) > 0 && !slices.Contains(ids, d.id) {
			kept = append(kept, d)
			continue
		}
		fresh, err := (Task{member: d.member}).fresh()
		if err != nil {
			return replayed, fmt.Errorf("dead letter %s: %w", d.id, err)
		}
		o.tasks[fresh] = now
		replayed++
	}
	o.dead = kept
	return replayed, nil
}

// Stats implements Outbox.
func (o *MemoryOutbox) Stats(context.Context) (OutboxStats, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := OutboxStats{Events: int64(len(o.events)), Tasks: int64(len(o.tasks)), DeadLetters: int64(len(o.dead))}
	if len(o.events) > 0 {
		ev, err := decodeEvent(o.events[0].envelope, o.events[0].value)
		if err != nil {
			return s, err
		}
		s.Oldest = ev.Time
	}
	var first string
	var firstAt time.Time
	for m, at := range o.tasks {
		if first == "" || at.Before(firstAt) {
			first, firstAt = m, at
		}
	}
	if first != "" {
		t, err := decodeTask(0, first)
		if err != nil {
			return s, err
		}
		s.Oldest = earliest(s.Oldest, t.Event.Time)
	}
	return s, nil
}

// earliest returns the earlier of two times, a zero time counting as none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
