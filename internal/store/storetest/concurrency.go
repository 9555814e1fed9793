package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/plant"
)

// The sizes of the concurrency cases: bounded by count, so that a slow store
// takes longer rather than checks less (a few seconds on Redis Cluster on the
// 2-core test machine).
const (
	walkers        = 3   // goroutines that walk the listing
	walksPerWalker = 12  // walks each
	churners       = 4   // goroutines that create and delete meanwhile
	maxChurnOps    = 1e5 // per churner: a bound for the fast embedded store
	raceRounds     = 100 // ids raced by creates and deletes, one after another
	racers         = 4   // goroutines racing on each id
	racerOps       = 4   // creates or deletes each racer sends per id
	contenders     = 8   // callers of the linearizability case
	contendedIDs   = 4   // the ids they share
	contenderOps   = 400 // operations each
)

// walkLimits are the page sizes of the walks, in turn: small pages make long
// walks with many cursors for the changes to fall between.
var walkLimits = []int{1, 4, 20, 100}

// universe is the ids the concurrency cases use: k-th of n, spread over the
// whole int64 range (negatives first) and over every shard.
func universe(k, n int) int64 {
	const stride = (1<<63 - 1) / 256
	return int64(k-n/2)*stride + int64(k%17)
}

// runConcurrency holds the cases of listing and changing at once (contract
// section 9: the walk guarantee, and create, delete and the listing changing
// atomically together).
func runConcurrency(t *testing.T, newRepo func(t *testing.T) Repository) {
	t.Run("walks under concurrent creates and deletes keep the walk guarantee", func(t *testing.T) {
		concurrentWalks(t, newRepo(t))
	})
	t.Run("deletes racing creates of one id leave list and get agreeing", func(t *testing.T) {
		racingCreateDelete(t, newRepo(t))
	})
}

func walkPlant(id int64) plant.Plant {
	p := plant.Plant{ID: id, Name: fmt.Sprint("walked ", id)}
	if id%2 == 0 {
		p.Tag = ptr(fmt.Sprint("t", id))
	}
	return p
}

// concurrentWalks: walkers follow the cursors from the first page while
// churners create and delete; every walk is checked against the history of
// the changes (History.CheckWalk). Of the ids, 3/8 are created before the
// walks and never deleted, 1/8 created and deleted before the walks, and 4/8
// created and deleted all along, each by the one churner that owns it.
func concurrentWalks(t *testing.T, r Repository) {
	ctx := context.Background()
	const n = 160
	h := NewHistory()
	var churn [churners][]int64
	for k := range n {
		id := universe(k, n)
		switch k % 8 {
		case 0, 1, 2: // lives through every walk
			create(t, r, h, id)
		case 3: // deleted before every walk
			create(t, r, h, id)
			remove(t, r, h, id)
		default: // churned; half of them there when the walks begin
			if k%16 < 8 {
				create(t, r, h, id)
			}
			churn[k%churners] = append(churn[k%churners], id)
		}
	}

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		problems []string
		walks    []walkRecord
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
		stop.Store(true)
	}
	// The walks begin once every churner has made its first change.
	var churning sync.WaitGroup
	churning.Add(churners)
	for c := range churners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			ready := func() { once.Do(churning.Done) }
			defer ready()
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			present := map[int64]bool{}
			for _, id := range churn[c] {
				_, err := r.Get(ctx, id)
				present[id] = err == nil
			}
			for i := 0; i < maxChurnOps && !stop.Load(); i++ {
				id := churn[c][rng.IntN(len(churn[c]))]
				call := h.Tick()
				var err error
				if present[id] {
					err = r.Delete(ctx, id)
					if err != nil && !errors.Is(err, plant.ErrUnavailable) {
						fail("churner %d: Delete(%d) of a plant it created: %v", c, id, err)
						return
					}
				} else {
					var outcome plant.Outcome
					_, outcome, err = r.Create(ctx, walkPlant(id))
					if (err != nil || outcome != plant.Created) && !errors.Is(err, plant.ErrUnavailable) {
						fail("churner %d: Create(%d) of a plant it deleted = %v, %v; want Created", c, id, outcome, err)
						return
					}
				}
				if err != nil {
					// Unavailable (503) says nothing of what the change did
					// (with replica acks the master may have made it): the
					// churner owns the id, so Get tells.
					now, gerr := getSettled(ctx, r, id)
					if gerr != nil {
						fail("churner %d: after %v, Get(%d) = %v", c, err, id, gerr)
						return
					}
					if now == present[id] {
						continue // the change was not made
					}
				}
				if present[id] {
					h.Deleted(id, call)
				} else {
					h.Created(id, call)
				}
				present[id] = !present[id]
				ready()
			}
		}()
	}
	churning.Wait()
	var walkersDone sync.WaitGroup
	for w := range walkers {
		walkersDone.Add(1)
		go func() {
			defer walkersDone.Done()
			for i := range walksPerWalker {
				if stop.Load() {
					return
				}
				limit := walkLimits[(w+i)%len(walkLimits)]
				rec, err := walk(ctx, r, h, limit)
				if err != nil {
					fail("walker %d, walk %d (limit %d): %v", w, i, limit, err)
					return
				}
				mu.Lock()
				walks = append(walks, rec)
				mu.Unlock()
			}
		}()
	}
	walkersDone.Wait()
	stop.Store(true)
	wg.Wait()
	if len(problems) > 0 {
		t.Fatalf("%d problem(s):\n%s", len(problems), strings.Join(problems, "\n"))
	}

	concurrent, pages, listed, bad := 0, 0, 0, 0
	for i, w := range walks {
		pages += w.pages
		listed += len(w.ids)
		if h.ChangesDuring(w.start, w.end) > 0 {
			concurrent++
		}
		if ps := h.CheckWalk(w.start, w.end, w.ids); len(ps) > 0 {
			bad++
			if bad <= 3 {
				t.Errorf("walk %d (limit %d, %d pages) breaks the walk guarantee:\n  %s", i, w.limit, w.pages, strings.Join(firstN(ps, 10), "\n  "))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d walks break the walk guarantee", bad, len(walks))
	}
	if len(walks) != walkers*walksPerWalker {
		t.Fatalf("%d walks, want %d", len(walks), walkers*walksPerWalker)
	}
	// The case proves nothing unless the store changed under the walks.
	if concurrent == 0 {
		t.Errorf("none of the %d walks saw a change while it ran (%d changes in all)", len(walks), h.Changes())
	}
	t.Logf("WALKS checked=%d with_concurrent_changes=%d pages=%d plants_listed=%d changes=%d broken=%d",
		len(walks), concurrent, pages, listed, h.Changes(), bad)

	// Quiet now: the listing is exactly the plants the history says exist,
	// every page but the last full.
	checkQuiet(t, r, h.Present(), walkPlant)
}

type walkRecord struct {
	start, end int64
	limit      int
	pages      int
	ids        []int64
}

// walk follows the cursors from the first page to the last, checking each
// page's own shape on the way.
func walk(ctx context.Context, r Repository, h *History, limit int) (walkRecord, error) {
	rec := walkRecord{limit: limit, start: h.Tick()}
	var after *int64
	for {
		page, err := r.List(ctx, after, limit)
		if err != nil {
			return rec, fmt.Errorf("listing: %w", err)
		}
		rec.pages++
		if len(page.Plants) > limit {
			return rec, fmt.Errorf("page %d holds %d plants, limit %d", rec.pages, len(page.Plants), limit)
		}
		for _, p := range page.Plants {
			if want := walkPlant(p.ID); !p.SameContent(want) {
				return rec, fmt.Errorf("page %d lists %+v, which no create stored (want %+v)", rec.pages, p, want)
			}
			rec.ids = append(rec.ids, p.ID)
		}
		if !page.More {
			break
		}
		if n := len(page.Plants); n > 0 && page.Cursor < page.Plants[n-1].ID {
			return rec, fmt.Errorf("page %d: cursor %d before its last plant %d", rec.pages, page.Cursor, page.Plants[n-1].ID)
		}
		if after != nil && page.Cursor <= *after {
			return rec, fmt.Errorf("page %d: cursor %d does not move past %d", rec.pages, page.Cursor, *after)
		}
		c := page.Cursor
		after = &c
		runtime.Gosched() // let the churners in between the pages of the embedded store
		if rec.pages > 1<<16 {
			return rec, errors.New("the walk does not end")
		}
	}
	rec.end = h.Tick()
	return rec, nil
}

func create(t *testing.T, r Repository, h *History, id int64) {
	t.Helper()
	call := h.Tick()
	mustCreate(t, r, walkPlant(id))
	h.Created(id, call)
}

func remove(t *testing.T, r Repository, h *History, id int64) {
	t.Helper()
	call := h.Tick()
	if err := r.Delete(context.Background(), id); err != nil {
		t.Fatalf("Delete(%d) = %v", id, err)
	}
	h.Deleted(id, call)
}

// checkQuiet checks a store no one changes: a walk lists exactly want, each
// plant as body(id) stores it and as Get reads it, every page but the last
// holding limit plants (a page is short only when plants were deleted while
// it was read).
func checkQuiet(t *testing.T, r Repository, want []int64, body func(int64) plant.Plant) {
	t.Helper()
	ctx := context.Background()
	for _, limit := range []int{7, 100} {
		var got []int64
		var after *int64
		for page := 1; ; page++ {
			pg, err := r.List(ctx, after, limit)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if pg.More && len(pg.Plants) != limit {
				t.Fatalf("limit %d, page %d of a quiet store holds %d plants and says more follow", limit, page, len(pg.Plants))
			}
			for _, p := range pg.Plants {
				if !p.SameContent(body(p.ID)) {
					t.Fatalf("listed %+v, want %+v", p, body(p.ID))
				}
				got = append(got, p.ID)
			}
			if !pg.More {
				break
			}
			c := pg.Cursor
			after = &c
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: a quiet walk listed %d plants, want %d: %s", limit, len(got), len(want), diff(got, want))
		}
	}
	for _, id := range want {
		if p, err := r.Get(ctx, id); err != nil || !p.SameContent(body(id)) {
			t.Fatalf("Get(%d) of a listed plant = %+v, %v", id, p, err)
		}
	}
}

// racingCreateDelete: several goroutines create and delete one id at once,
// round after round. Once they have all returned, the id is listed exactly
// when Get finds it, and the creates that created and the deletes that
// deleted alternate: as many of each, one more create when it exists.
//
// A create or delete that answers unavailable (503) says nothing of what it
// did: with replica acks the master has made the change when the replicas
// fail to acknowledge it in time, as a starved replica on a loaded machine
// does. Each such answer widens the count by one either way; the listing and
// Get must agree all the same. Most rounds must have none, or the case
// checks too little.
func racingCreateDelete(t *testing.T, r Repository) {
	ctx := context.Background()
	var ids []int64
	unsureRounds := 0
	for round := range raceRounds {
		id := universe(round, raceRounds)
		ids = append(ids, id)
		body := plant.Plant{ID: id, Name: fmt.Sprint("raced ", id)}
		var created, deleted, unsureCreates, unsureDeletes atomic.Int32
		var wg sync.WaitGroup
		for g := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for range racerOps {
					if rng.IntN(2) == 0 {
						_, outcome, err := r.Create(ctx, body)
						switch {
						case errors.Is(err, plant.ErrUnavailable):
							unsureCreates.Add(1)
						case err != nil:
							t.Errorf("round %d: Create(%d) = %v", round, id, err)
						case outcome == plant.Created:
							created.Add(1)
						}
						continue
					}
					switch err := r.Delete(ctx, id); {
					case err == nil:
						deleted.Add(1)
					case errors.Is(err, plant.ErrUnavailable):
						unsureDeletes.Add(1)
					case !errors.Is(err, plant.ErrNotFound):
						t.Errorf("round %d: Delete(%d) = %v", round, id, err)
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}

		_, err := r.Get(ctx, id)
		found := err == nil
		if err != nil && !errors.Is(err, plant.ErrNotFound) {
			t.Fatalf("round %d: Get(%d) = %v", round, id, err)
		}
		before := id - 1
		page, err := r.List(ctx, &before, 1)
		if err != nil {
			t.Fatalf("round %d: List: %v", round, err)
		}
		listed := len(page.Plants) == 1 && page.Plants[0].ID == id
		if listed != found {
			t.Fatalf("round %d: id %d listed %v, but Get finds it %v (page %+v)", round, id, listed, found, page)
		}
		want := int32(0)
		if found {
			want = 1
		}
		// The unavailable answers that did change the store make up the
		// difference: uc creates and ud deletes at most.
		uc, ud := unsureCreates.Load(), unsureDeletes.Load()
		if d := want - (created.Load() - deleted.Load()); d > uc || -d > ud {
			t.Fatalf("round %d: %d creates created and %d deletes deleted (%d and %d more answered unavailable), yet the plant exists %v",
				round, created.Load(), deleted.Load(), uc, ud, found)
		}
		if uc+ud > 0 {
			unsureRounds++
			t.Logf("round %d: %d creates and %d deletes answered unavailable", round, uc, ud)
		}
	}
	if unsureRounds > raceRounds/4 {
		t.Fatalf("in %d of %d rounds a create or delete answered unavailable: too few rounds checked exactly", unsureRounds, raceRounds)
	}
	var present []int64
	for _, id := range ids {
		if _, err := r.Get(ctx, id); err == nil {
			present = append(present, id)
		}
	}
	slices.Sort(present)
	checkQuiet(t, r, present, func(id int64) plant.Plant { return plant.Plant{ID: id, Name: fmt.Sprint("raced ", id)} })
	t.Logf("RACES rounds=%d racers=%d ops=%d present_after=%d rounds_with_unavailable=%d", raceRounds, racers, raceRounds*racers*racerOps, len(present), unsureRounds)
}

// getSettled reports whether id exists, asking again while the store answers
// unavailable (for at most about 30 s).
func getSettled(ctx context.Context, r Repository, id int64) (bool, error) {
	for attempt := 0; ; attempt++ {
		_, err := r.Get(ctx, id)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, plant.ErrNotFound):
			return false, nil
		case !errors.Is(err, plant.ErrUnavailable) || attempt == 300:
			return false, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func firstN(s []string, n int) []string { return s[:min(len(s), n)] }

// diff describes how got differs from want.
func diff(got, want []int64) string {
	in := func(ids []int64) map[int64]bool {
		m := make(map[int64]bool, len(ids))
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	g, w := in(got), in(want)
	var extra, missing []int64
	twice := len(got) - len(g)
	for _, id := range got {
		if !w[id] {
			extra = append(extra, id)
		}
	}
	for _, id := range want {
		if !g[id] {
			missing = append(missing, id)
		}
	}
	return fmt.Sprintf("%d listed twice, extra %v, missing %v", twice, extra[:min(len(extra), 10)], missing[:min(len(missing), 10)])
}
