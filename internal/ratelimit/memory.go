package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/plantstore/plantstore/internal/auth"
)

// Memory keeps the budgets in the process: the limits of a single replica
// on the embedded store. It runs the same GCRA as the Redis store.
type Memory struct {
	mu  sync.Mutex
	tat map[string]time.Time // per key, the theoretical arrival time
	now func() time.Time
}

// NewMemory returns an empty in-process store.
func NewMemory() *Memory { return &Memory{tat: map[string]time.Time{}, now: time.Now} }

// sweepAbove is the number of budgets past which Allow drops the full ones:
// the keys are bounded by the tokens file, so this only matters when
// tokens are rotated for a long time.
const sweepAbove = 4096

// Allow takes one request of key's budget (GCRA: each request moves the
// theoretical arrival time on by period/count; a request is admitted while
// that time is at most burst emission intervals ahead of now).
func (m *Memory) Allow(_ context.Context, key string, r auth.Rate) (Decision, error) {
	emission := r.Period / time.Duration(r.Count)
	burstOffset := emission * time.Duration(r.Burst)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	tat := m.tat[key]
	if tat.Before(now) {
		tat = now
	}
	newTat := tat.Add(emission)
	allowAt := newTat.Add(-burstOffset)
	if now.Before(allowAt) {
		return Decision{RetryAfter: allowAt.Sub(now), ResetAfter: tat.Sub(now)}, nil
	}
	if len(m.tat) >= sweepAbove {
		for k, t := range m.tat {
			if !t.After(now) {
				delete(m.tat, k)
			}
		}
	}
	m.tat[key] = newTat
	return Decision{Allowed: true, Remaining: int(now.Sub(allowAt) / emission), ResetAfter: newTat.Sub(now)}, nil
}
