package storetest

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// History records the changes made to a store while listings walk it, so
// that each walk can be checked against contract section 9's guarantee: a
// walk that follows the cursors from the first page lists every plant that
// existed for the whole walk exactly once, no plant that was absent for the
// whole walk, and no id twice.
//
// Time is a sequence of ticks (Tick): a change takes one tick before its call
// and one after its return, a walk one before its first page and one after
// its last, so "returned before the walk began" is a comparison of ticks,
// whatever the scheduling. The changes of one id must be made one after
// another (one goroutine owns an id at a time); different ids may change
// concurrently. The HTTP tests use it too, through the built service.
type History struct {
	clock atomic.Int64

	mu      sync.Mutex
	changes map[int64][]change // per id, in the order they were made
}

// change is a create that created or a delete that deleted, with the ticks
// of its call and return.
type change struct {
	create    bool
	call, ret int64
}

// NewHistory returns an empty history: no id has ever existed.
func NewHistory() *History { return &History{changes: map[int64][]change{}} }

// Tick returns the next tick: take one before a call and pass it to Created
// or Deleted after the call returns; take one before a walk's first page and
// one after its last.
func (h *History) Tick() int64 { return h.clock.Add(1) }

// Created records that a create of id, called at tick call, created the
// plant (outcome Created, or HTTP 200 on an absent id) and has returned.
func (h *History) Created(id, call int64) { h.record(id, change{create: true, call: call}) }

// Deleted records that a delete of id, called at tick call, removed the plant
// and has returned.
func (h *History) Deleted(id, call int64) { h.record(id, change{call: call}) }

func (h *History) record(id int64, c change) {
	c.ret = h.Tick()
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev := h.changes[id]; len(prev) > 0 && prev[len(prev)-1].create == c.create {
		panic(fmt.Sprintf("storetest.History: id %d changed twice the same way in a row: the caller does not own it", id))
	}
	h.changes[id] = append(h.changes[id], c)
}

// Changes is the number of changes recorded.
func (h *History) Changes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, cs := range h.changes {
		n += len(cs)
	}
	return n
}

// ChangesDuring is the number of changes called or returned between the
// ticks start and end: how much the store changed under a walk.
func (h *History) ChangesDuring(start, end int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, cs := range h.changes {
		for _, c := range cs {
			if c.call <= end && c.ret >= start {
				n++
			}
		}
	}
	return n
}

// Present returns the ids that exist once every recorded change has
// returned, in ascending order.
func (h *History) Present() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for id, cs := range h.changes {
		if cs[len(cs)-1].create {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// CheckWalk checks the ids one walk listed, in the order it listed them,
// between the ticks start (before its first page) and end (after its last),
// and returns what is wrong with it (nothing when it keeps the guarantee).
func (h *History) CheckWalk(start, end int64, listed []int64) []string {
	var problems []string
	seen := make(map[int64]bool, len(listed))
	for i, id := range listed {
		if seen[id] {
			problems = append(problems, fmt.Sprintf("id %d listed twice", id))
		} else if i > 0 && id <= listed[i-1] {
			problems = append(problems, fmt.Sprintf("id %d listed after %d: not ascending", id, listed[i-1]))
		}
		seen[id] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range seen {
		if !mayExist(h.changes[id], start, end) {
			problems = append(problems, fmt.Sprintf("id %d listed, but it was absent for the whole walk (changes %v, walk %d..%d)", id, h.changes[id], start, end))
		}
	}
	for id, cs := range h.changes {
		if !seen[id] && existedThroughout(cs, start, end) {
			problems = append(problems, fmt.Sprintf("id %d not listed, but it existed for the whole walk (changes %v, walk %d..%d)", id, cs, start, end))
		}
	}
	return problems
}

// existedThroughout: some create returned before the walk began and the
// delete that followed it (if any) was called after the walk ended.
func existedThroughout(cs []change, start, end int64) bool {
	for i, c := range cs {
		if c.create && c.ret < start && (i+1 == len(cs) || cs[i+1].call > end) {
			return true
		}
	}
	return false
}

// mayExist: some create was called before the walk ended and the delete that
// followed it (if any) returned after the walk began.
func mayExist(cs []change, start, end int64) bool {
	for i, c := range cs {
		if c.create && c.call < end && (i+1 == len(cs) || cs[i+1].ret > start) {
			return true
		}
	}
	return false
}

func (c change) String() string {
	what := "delete"
	if c.create {
		what = "create"
	}
	return fmt.Sprintf("%s@%d..%d", what, c.call, c.ret)
}
