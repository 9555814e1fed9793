// Package store holds the plant repositories: Redis for production and an
// embedded in-process store for local use. Both keep the promises of
// plant.Repository and pass the same conformance suite (storetest).
package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/plantstore/plantstore/internal/plant"
)

// Memory is the embedded store: a map behind a mutex. It is not durable:
// everything is lost when the process exits.
type Memory struct {
	mu     sync.Mutex
	plants map[int64]plant.Plant
}

// NewMemory returns an empty embedded store.
func NewMemory() *Memory { return &Memory{plants: make(map[int64]plant.Plant)} }

// Create implements plant.Repository.
func (m *Memory) Create(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return plant.Plant{}, 0, fmt.Errorf("%w: %w", plant.ErrUnavailable, err)
	}
	p = clonePlant(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if stored, ok := m.plants[p.ID]; ok {
		if stored.SameContent(p) {
			return clonePlant(stored), plant.Replayed, nil
		}
		return clonePlant(stored), 0, fmt.Errorf("id %d: %w", p.ID, plant.ErrConflict)
	}
	m.plants[p.ID] = p
	return clonePlant(p), plant.Created, nil
}

// Get returns the plant stored under id.
func (m *Memory) Get(_ context.Context, id int64) (plant.Plant, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.plants[id]
	return clonePlant(p), ok, nil
}

// Ping always succeeds: the embedded store is always there.
func (m *Memory) Ping(context.Context) error { return nil }

// clonePlant copies the tag so that no caller shares memory with the store.
func clonePlant(p plant.Plant) plant.Plant {
	if p.Tag != nil {
		t := *p.Tag
		p.Tag = &t
	}
	return p
}
