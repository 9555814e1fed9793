// Package store holds the plant repositories: Redis for production and an
// embedded in-process store for local use. Both keep the promises of
// plant.Repository and pass the same conformance suite (storetest).
package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/plantstore/plantstore/internal/plant"
)

// Memory is the embedded store: a B-tree ordered by id behind a mutex, so a
// page is O(log n + limit) whatever the size of the store. It is not durable:
// everything is lost when the process exits.
type Memory struct {
	mu     sync.RWMutex
	plants *btree.BTreeG[plant.Plant]
	// recording on: each create and delete appends its event to outbox
	// inside the same critical section (docs/webhooks.md).
	recording *Recording
	outbox    *MemoryOutbox
}

// memoryDegree is the B-tree's branching: 32 keeps nodes within a few cache
// lines of plant headers, the library's own suggestion for in-memory trees.
const memoryDegree = 32

// NewMemory returns an empty embedded store.
func NewMemory() *Memory {
	return &Memory{plants: btree.NewG(memoryDegree, func(a, b plant.Plant) bool { return a.ID < b.ID }),
		outbox: &MemoryOutbox{tasks: map[string]time.Time{}, deadKept: deadLetterCap}}
}

// RecordEvents makes every create and delete record its event in the
// store's outbox while rec is on.
func (m *Memory) RecordEvents(rec *Recording) *Memory {
	m.recording = rec
	return m
}

// Outbox returns the store's outbox, an in-process queue lost with the
// process like the plants themselves.
func (m *Memory) Outbox() *MemoryOutbox { return m.outbox }

// Create implements plant.Repository.
func (m *Memory) Create(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return plant.Plant{}, 0, fmt.Errorf("%w: %w", plant.ErrUnavailable, err)
	}
	p = clonePlant(p)
	var envelope, value []byte
	if m.recording.On() {
		var err error
		if envelope, value, err = memoryEvent(ctx, EventCreated, p); err != nil {
			return plant.Plant{}, 0, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if stored, ok := m.plants.Get(plant.Plant{ID: p.ID}); ok {
		if stored.SameContent(p) {
			return clonePlant(stored), plant.Replayed, nil
		}
		return clonePlant(stored), 0, fmt.Errorf("id %d: %w", p.ID, plant.ErrConflict)
	}
	m.plants.ReplaceOrInsert(p)
	if envelope != nil {
		m.outbox.record(envelope, value)
	}
	return clonePlant(p), plant.Created, nil
}

// Get implements plant.Repository.
func (m *Memory) Get(ctx context.Context, id int64) (plant.Plant, error) {
	if err := ctx.Err(); err != nil {
		return plant.Plant{}, fmt.Errorf("%w: %w", plant.ErrUnavailable, err)
	}
	m.mu.RLock()
	p, ok := m.plants.Get(plant.Plant{ID: id})
	m.mu.RUnlock()
	if !ok {
		return plant.Plant{}, fmt.Errorf("id %d: %w", id, plant.ErrNotFound)
	}
	return clonePlant(p), nil
}

// Delete implements plant.Repository.
func (m *Memory) Delete(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", plant.ErrUnavailable, err)
	}
	var envelope []byte
	if m.recording.On() {
		var err error
		if envelope, err = newEventRecord(ctx, EventDeleted, id); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.plants.Delete(plant.Plant{ID: id})
	if !ok {
		return fmt.Errorf("id %d: %w", id, plant.ErrNotFound)
	}
	if envelope != nil {
		value, err := json.Marshal(storedPlant{Name: old.Name, Tag: old.Tag})
		if err != nil {
			return fmt.Errorf("encoding plant %d: %w", id, err)
		}
		m.outbox.record(envelope, value)
	}
	return nil
}

// List implements plant.Repository: one walk of the tree under a read lock,
// so a page is a consistent snapshot.
func (m *Memory) List(ctx context.Context, after *int64, limit int) (plant.Page, error) {
	if err := ctx.Err(); err != nil {
		return plant.Page{}, fmt.Errorf("%w: %w", plant.ErrUnavailable, err)
	}
	page := plant.Page{Plants: make([]plant.Plant, 0, min(limit, 64))}
	visit := func(p plant.Plant) bool {
		if after != nil && p.ID == *after {
			return true // AscendGreaterOrEqual includes the bound; the page starts after it
		}
		if len(page.Plants) == limit {
			page.More, page.Cursor = true, page.Plants[limit-1].ID
			return false
		}
		page.Plants = append(page.Plants, clonePlant(p))
		return true
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if after == nil {
		m.plants.Ascend(visit)
	} else {
		m.plants.AscendGreaterOrEqual(plant.Plant{ID: *after}, visit)
	}
	return page, nil
}

// Len returns the number of stored plants.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.plants.Len()
}

// Ping always succeeds: the embedded store is always there.
func (m *Memory) Ping(context.Context) error { return nil }

// memoryEvent encodes the event of a change to p and p as stored.
func memoryEvent(ctx context.Context, typ string, p plant.Plant) (envelope, value []byte, err error) {
	if envelope, err = newEventRecord(ctx, typ, p.ID); err != nil {
		return nil, nil, err
	}
	if value, err = json.Marshal(storedPlant{Name: p.Name, Tag: p.Tag}); err != nil {
		return nil, nil, fmt.Errorf("encoding plant %d: %w", p.ID, err)
	}
	return envelope, value, nil
}

// clonePlant copies the tag so that no caller shares memory with the store.
func clonePlant(p plant.Plant) plant.Plant {
	if p.Tag != nil {
		t := *p.Tag
		p.Tag = &t
	}
	return p
}
