package storetest

import (
	"slices"
	"strings"
	"testing"
)

// TestCheckWalk: the checker of the walk guarantee accepts what the contract
// allows and names every way a walk can break it.
func TestCheckWalk(t *testing.T) {
	// A history on ticks 1..: id 1 created before the walk and never deleted;
	// id 2 created and deleted before it; id 3 created before it and deleted
	// during it; id 4 created during it; id 5 deleted before it and created
	// again after it; id 6 deleted during it and created again during it.
	h := NewHistory()
	at := func(what func(id, call int64), id int64) { what(id, h.Tick()) }
	at(h.Created, 1) // 1..2
	at(h.Created, 2) // 3..4
	at(h.Deleted, 2) // 5..6
	at(h.Created, 3) // 7..8
	at(h.Created, 5) // 9..10
	at(h.Deleted, 5) // 11..12
	at(h.Created, 6) // 13..14
	start := h.Tick()
	at(h.Deleted, 3) // 16..17
	at(h.Created, 4) // 18..19
	at(h.Deleted, 6) // 20..21
	at(h.Created, 6) // 22..23
	end := h.Tick()
	at(h.Created, 5) // 25..26

	for _, tc := range []struct {
		name   string
		listed []int64
		want   []string // substrings, one per problem; none: valid
	}{
		{"the survivor alone", []int64{1}, nil},
		{"with the plants changed during the walk", []int64{1, 3, 4, 6}, nil},
		{"some of them", []int64{1, 4}, nil},
		{"the survivor missing", []int64{3, 4}, []string{"id 1 not listed"}},
		{"a plant deleted before the walk", []int64{1, 2}, []string{"id 2 listed, but it was absent"}},
		{"a plant recreated only after the walk", []int64{1, 5}, []string{"id 5 listed, but it was absent"}},
		{"an id twice", []int64{1, 3, 3}, []string{"id 3 listed twice"}},
		{"an id twice, apart", []int64{1, 3, 4, 3}, []string{"id 3 listed twice"}},
		{"out of order", []int64{3, 1}, []string{"id 1 listed after 3"}},
		{"an id never created", []int64{1, 7}, []string{"id 7 listed, but it was absent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.CheckWalk(start, end, tc.listed)
			if len(got) != len(tc.want) {
				t.Fatalf("CheckWalk(%v) = %q, want %d problem(s) %q", tc.listed, got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q, want one naming %q", got[i], w)
				}
			}
		})
	}

	if got := h.Present(); !slices.Equal(got, []int64{1, 4, 5, 6}) {
		t.Errorf("Present() = %v, want [1 4 5 6]", got)
	}
	if n := h.ChangesDuring(start, end); n != 4 {
		t.Errorf("ChangesDuring = %d, want the 4 changes made during the walk", n)
	}
	if n := h.Changes(); n != 12 {
		t.Errorf("Changes = %d, want 12", n)
	}
}

// TestHistoryRefusesUnownedChanges: two creates of one id in a row mean two
// goroutines changed it at once, and the history cannot judge walks then.
func TestHistoryRefusesUnownedChanges(t *testing.T) {
	h := NewHistory()
	h.Created(1, h.Tick())
	defer func() {
		if recover() == nil {
			t.Fatal("a second create of id 1 in a row was recorded")
		}
	}()
	h.Created(1, h.Tick())
}
