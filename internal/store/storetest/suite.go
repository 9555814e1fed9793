// Package storetest is the conformance suite every plant.Repository must
// pass; the embedded store and the Redis store both run it.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plantstore/plantstore/internal/plant"
)

// Repository is what the suite exercises.
type Repository = plant.Repository

func ptr(s string) *string { return &s }

// Run runs the suite. newRepo must return an empty repository.
func Run(t *testing.T, newRepo func(t *testing.T) Repository) {
	ctx := context.Background()

	t.Run("creates and stores", func(t *testing.T) {
		r := newRepo(t)
		for _, p := range []plant.Plant{
			{ID: 1, Name: "Monstera", Tag: ptr("tropical")},
			{ID: 2, Name: "Fern"},
			{ID: 3, Name: "Cactus", Tag: ptr("")},
			{ID: 0, Name: "zero"},
			{ID: -7, Name: "negative"},
			{ID: math.MaxInt64, Name: "max"},
			{ID: math.MinInt64, Name: "min"},
			{ID: 4, Name: "日本の植物 🌱 \"quoted\" <b>&</b> \\", Tag: ptr("ünïcödé")},
		} {
			got, outcome, err := r.Create(ctx, p)
			if err != nil || outcome != plant.Created {
				t.Fatalf("Create(%+v) = %v, %v; want Created", p, outcome, err)
			}
			if !got.SameContent(p) || got.ID != p.ID {
				t.Fatalf("Create returned %+v, want %+v", got, p)
			}
			stored, err := r.Get(ctx, p.ID)
			if err != nil || !stored.SameContent(p) || stored.ID != p.ID {
				t.Fatalf("Get(%d) = %+v, %v; want %+v", p.ID, stored, err, p)
			}
			if (stored.Tag == nil) != (p.Tag == nil) {
				t.Fatalf("Get(%d) tag presence %v, want %v", p.ID, stored.Tag != nil, p.Tag != nil)
			}
		}
	})

	t.Run("same content replays", func(t *testing.T) {
		r := newRepo(t)
		p := plant.Plant{ID: 10, Name: "Ivy", Tag: ptr("climber")}
		mustCreate(t, r, p)
		got, outcome, err := r.Create(ctx, p)
		if err != nil || outcome != plant.Replayed || !got.SameContent(p) {
			t.Fatalf("repeat Create = %+v, %v, %v; want the stored plant, Replayed", got, outcome, err)
		}
	})

	t.Run("different content conflicts and changes nothing", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			second plant.Plant
		}{
			{"other name", plant.Plant{ID: 20, Name: "Rose", Tag: ptr("flower")}},
			{"other tag", plant.Plant{ID: 20, Name: "Tulip", Tag: ptr("bulb")}},
			{"tag absent", plant.Plant{ID: 20, Name: "Tulip"}},
			{"tag empty", plant.Plant{ID: 20, Name: "Tulip", Tag: ptr("")}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := newRepo(t)
				first := plant.Plant{ID: 20, Name: "Tulip", Tag: ptr("flower")}
				mustCreate(t, r, first)
				_, _, err := r.Create(ctx, tc.second)
				if !errors.Is(err, plant.ErrConflict) {
					t.Fatalf("Create(%+v) error = %v, want ErrConflict", tc.second, err)
				}
				stored, _ := r.Get(ctx, 20)
				if !stored.SameContent(first) {
					t.Fatalf("stored plant changed to %+v", stored)
				}
			})
		}
	})

	t.Run("absent tag and empty tag are different plants", func(t *testing.T) {
		r := newRepo(t)
		mustCreate(t, r, plant.Plant{ID: 30, Name: "Moss"})
		if _, _, err := r.Create(ctx, plant.Plant{ID: 30, Name: "Moss", Tag: ptr("")}); !errors.Is(err, plant.ErrConflict) {
			t.Fatalf("empty tag over absent tag: %v, want ErrConflict", err)
		}
	})

	t.Run("returned plants do not alias the store", func(t *testing.T) {
		r := newRepo(t)
		tag := "orig"
		p := plant.Plant{ID: 40, Name: "Aloe", Tag: &tag}
		got := mustCreate(t, r, p)
		tag = "changed"
		*got.Tag = "changed too"
		stored, _ := r.Get(ctx, 40)
		if *stored.Tag != "orig" {
			t.Fatalf("stored tag = %q, want orig", *stored.Tag)
		}
	})

	t.Run("concurrent creates of one id store exactly one body", func(t *testing.T) {
		r := newRepo(t)
		const workers = 32
		bodies := []plant.Plant{
			{ID: 50, Name: "A"}, {ID: 50, Name: "B"}, {ID: 50, Name: "C", Tag: ptr("c")}, {ID: 50, Name: "C"},
		}
		var created, replayed, conflicts atomic.Int32
		var wg sync.WaitGroup
		results := make([]plant.Plant, workers)
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, outcome, err := r.Create(ctx, bodies[i%len(bodies)])
				switch {
				case errors.Is(err, plant.ErrConflict):
					conflicts.Add(1)
				case err != nil:
					t.Errorf("Create: %v", err)
				case outcome == plant.Created:
					created.Add(1)
					results[i] = got
				default:
					replayed.Add(1)
					results[i] = got
				}
			}()
		}
		wg.Wait()
		if created.Load() != 1 {
			t.Fatalf("created %d times, want exactly 1", created.Load())
		}
		stored, _ := r.Get(ctx, 50)
		var winners int
		for _, b := range bodies {
			if b.SameContent(stored) {
				winners++
			}
		}
		if winners != 1 {
			t.Fatalf("stored %+v is not exactly one of the bodies", stored)
		}
		if got := created.Load() + replayed.Load() + conflicts.Load(); got != workers {
			t.Fatalf("answers = %d, want %d", got, workers)
		}
		// Every success must report the winner; every loser's body differs.
		if want := int32(workers / len(bodies)); created.Load()+replayed.Load() != want {
			t.Fatalf("successes = %d, want %d (the winner's share)", created.Load()+replayed.Load(), want)
		}
		for _, res := range results {
			if res.Name != "" && !res.SameContent(stored) {
				t.Fatalf("a success returned %+v, not the stored %+v", res, stored)
			}
		}
	})

	t.Run("concurrent creates of distinct ids all land", func(t *testing.T) {
		r := newRepo(t)
		const n = 200
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, outcome, err := r.Create(ctx, plant.Plant{ID: int64(1000 + i), Name: fmt.Sprint("p", i)}); err != nil || outcome != plant.Created {
					t.Errorf("Create(%d) = %v, %v", 1000+i, outcome, err)
				}
			}()
		}
		wg.Wait()
		for i := range n {
			p, err := r.Get(ctx, int64(1000+i))
			if err != nil || p.Name != fmt.Sprint("p", i) {
				t.Fatalf("Get(%d) = %+v, %v", 1000+i, p, err)
			}
		}
	})

	t.Run("cancelled context is unavailable, not stored", func(t *testing.T) {
		r := newRepo(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, _, err := r.Create(cctx, plant.Plant{ID: 60, Name: "Never"})
		if !errors.Is(err, plant.ErrUnavailable) {
			t.Fatalf("Create with cancelled context: %v, want ErrUnavailable", err)
		}
		if _, err := r.Get(ctx, 60); !errors.Is(err, plant.ErrNotFound) {
			t.Fatalf("a plant was stored under a cancelled context (Get: %v)", err)
		}
		if _, err := r.Get(cctx, 60); !errors.Is(err, plant.ErrUnavailable) {
			t.Fatalf("Get with cancelled context: %v, want ErrUnavailable", err)
		}
		if _, err := r.List(cctx, nil, 10); !errors.Is(err, plant.ErrUnavailable) {
			t.Fatalf("List with cancelled context: %v, want ErrUnavailable", err)
		}
		mustCreate(t, r, plant.Plant{ID: 61, Name: "Kept"})
		if err := r.Delete(cctx, 61); !errors.Is(err, plant.ErrUnavailable) {
			t.Fatalf("Delete with cancelled context: %v, want ErrUnavailable", err)
		}
		if _, err := r.Get(ctx, 61); err != nil {
			t.Fatalf("a Delete under a cancelled context removed the plant (Get: %v)", err)
		}
	})

	runResource(t, newRepo)
	runConcurrency(t, newRepo)

	// The strongest case: whole histories, not counts of readable ids.
	t.Run("contended histories are linearizable", func(t *testing.T) {
		r := newRepo(t)
		callers := make([]Caller, contenders)
		for i := range callers {
			callers[i] = RepositoryCaller(r)
		}
		h := Contend(ctx, ContendOptions{Callers: callers, IDs: contendedIDs, Plants: 3, Ops: contenderOps})
		t.Logf("%v", CheckLinearizable(t, h))
	})
}

func mustCreate(t *testing.T, r Repository, p plant.Plant) plant.Plant {
	t.Helper()
	got, outcome, err := r.Create(context.Background(), p)
	if err != nil || outcome != plant.Created {
		t.Fatalf("Create(%+v) = %v, %v; want Created", p, outcome, err)
	}
	return got
}
