package storetest

import (
	"context"
	"math"
	"testing"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/store"
)

// TestModelHistories: the checker accepts the histories the contract allows
// and flags each way a store can break it, on hand-written histories of one
// or two ids (times in arbitrary units).
func TestModelHistories(t *testing.T) {
	p1, p2 := ContendedPlant(1, 0), ContendedPlant(1, 1)
	type op struct {
		client    int
		in        Input
		call, ret int64
		out       Output
	}
	create := func(p plant.Plant) Input { return Input{Kind: OpCreate, ID: p.ID, Plant: p} }
	read := Input{Kind: OpRead, ID: 1}
	del := Input{Kind: OpDelete, ID: 1}
	found := func(p plant.Plant) Output { return Output{Result: Found, Plant: p} }
	for _, tc := range []struct {
		name    string
		ops     []op
		illegal bool
	}{
		{"sequential create, replay, conflict, read, delete", []op{
			{0, create(p1), 0, 1, Output{Result: Created}},
			{0, create(p1), 2, 3, Output{Result: Replayed}},
			{0, create(p2), 4, 5, Output{Result: Conflict, Plant: p1, PlantKnown: true}},
			{0, read, 6, 7, found(p1)},
			{0, del, 8, 9, Output{Result: Deleted}},
			{0, read, 10, 11, Output{Result: NotFound}},
			{0, del, 12, 13, Output{Result: NotFound}},
			{0, create(p2), 14, 15, Output{Result: Stored}},
		}, false},
		{"concurrent creates of two plants: one wins, the other conflicts", []op{
			{0, create(p1), 0, 10, Output{Result: Conflict, Plant: p2, PlantKnown: true}},
			{1, create(p2), 0, 10, Output{Result: Created}},
			{2, read, 5, 6, found(p2)},
		}, false},
		{"a read concurrent with a delete may see either", []op{
			{0, create(p1), 0, 1, Output{Result: Created}},
			{1, del, 2, 10, Output{Result: Deleted}},
			{2, read, 3, 4, found(p1)},
			{3, read, 5, 6, Output{Result: NotFound}},
		}, false},
		{"a replay that puts an old plant back over a newer acknowledged one", []op{
			{0, create(p1), 0, 1, Output{Result: Created}},
			{1, create(p1), 2, 100, Output{Result: Replayed}},
			{2, del, 10, 20, Output{Result: Deleted}},
			{3, create(p2), 30, 40, Output{Result: Created}},
			{3, read, 110, 120, found(p1)},
		}, true},
		{"a deleted plant read again", []op{
			{0, create(p1), 0, 1, Output{Result: Created}},
			{0, del, 2, 3, Output{Result: Deleted}},
			{1, read, 4, 5, found(p1)},
		}, true},
		{"a delete undone", []op{
			{0, create(p1), 0, 1, Output{Result: Created}},
			{0, del, 2, 3, Output{Result: Deleted}},
			{1, del, 4, 5, Output{Result: Deleted}},
		}, true},
		{"a plant read before its create was called", []op{
			{1, read, 0, 1, found(p1)},
			{0, create(p1), 2, 3, Output{Result: Created}},
		}, true},
		{"an acknowledged create not found afterwards", []op{
			{0, create(p1), 0, 1, Output{Result: Created}},
			{1, read, 2, 3, Output{Result: NotFound}},
		}, true},
		{"created twice with no delete between", []op{
			{0, create(p1), 0, 1, Output{Result: Created}},
			{1, create(p1), 2, 3, Output{Result: Created}},
		}, true},
		{"a conflict naming a plant that is not stored", []op{
			{0, create(p1), 0, 1, Output{Result: Created}},
			{1, create(p2), 2, 3, Output{Result: Conflict, Plant: ContendedPlant(1, 2), PlantKnown: true}},
		}, true},
		{"an indeterminate create may take effect later", []op{
			{0, create(p1), 0, 1, Output{}},
			{1, read, 2, 3, Output{Result: NotFound}},
			{1, read, 4, 5, found(p1)},
		}, false},
		{"an indeterminate create may never take effect", []op{
			{0, create(p1), 0, 1, Output{}},
			{1, read, 2, 3, Output{Result: NotFound}},
			{1, create(p2), 4, 5, Output{Result: Created}},
		}, false},
		{"an indeterminate delete may have removed the plant", []op{
			{0, create(p1), 0, 1, Output{Result: Created}},
			{1, del, 2, 3, Output{}},
			{0, read, 4, 5, Output{Result: NotFound}},
		}, false},
		{"an indeterminate create does not excuse a plant never sent", []op{
			{0, create(p1), 0, 1, Output{}},
			{1, read, 2, 3, found(p2)},
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewLinear(1)
			for _, o := range tc.ops {
				h.Record(o.client, o.in, o.call, o.out, o.ret)
			}
			v := h.Check(0, "")
			if got := len(v.Illegal) > 0; got != tc.illegal || len(v.Undecided) > 0 {
				t.Fatalf("verdict %v; want illegal %v", v, tc.illegal)
			}
		})
	}
}

// TestListingsAreReadsOfEachID: a complete listing is a read of every
// contended id (listed: found; not listed: 404), a failed or incomplete one
// observes nothing, and an unexpected answer fails the verdict.
func TestListingsAreReadsOfEachID(t *testing.T) {
	p1, p2 := ContendedPlant(1, 0), ContendedPlant(2, 0)
	list := Input{Kind: OpList}
	h := NewLinear(2)
	h.Record(0, Input{Kind: OpCreate, ID: 1, Plant: p1}, 0, Output{Result: Created}, 1)
	h.Record(0, list, 2, Output{Result: Found, Page: map[int64]plant.Plant{1: p1}}, 3)
	h.Record(0, list, 4, Output{}, 5) // failed: nothing
	if v := h.Check(0, ""); !v.OK() || v.Ops != 3 || v.IDs != 2 {
		t.Fatalf("verdict %v; want 3 operations on 2 ids, linearizable", v)
	}
	h.Record(1, list, 6, Output{Result: Found, Page: map[int64]plant.Plant{2: p2}}, 7)
	if v := h.Check(0, ""); len(v.Illegal) != 2 {
		t.Fatalf("verdict %v; want both ids illegal (1 missing from a listing, 2 listed but never created)", v)
	}

	h = NewLinear(1)
	h.Record(0, Input{Kind: OpRead, ID: 1}, 0, Output{Unexpected: "500"}, 1)
	if v := h.Check(0, ""); v.OK() || len(v.Unexpected) != 1 || v.Ops != 0 {
		t.Fatalf("verdict %v; want not OK for the unexpected answer, and the read left out (indeterminate, it observed nothing)", v)
	}
}

// TestCheckerFlagsACorruptedRecording: a real recorded history of the
// embedded store is linearizable, and the same history with one read's
// plant swapped for a plant never sent is not.
func TestCheckerFlagsACorruptedRecording(t *testing.T) {
	r := store.NewMemory()
	callers := make([]Caller, 6)
	for i := range callers {
		callers[i] = RepositoryCaller(r)
	}
	h := Contend(context.Background(), ContendOptions{Callers: callers, IDs: 2, Plants: 3, Ops: 300})
	if v := h.Check(0, ""); !v.OK() || v.Ops < 1800 || v.IDs != 2 {
		t.Fatalf("verdict %v; want about 1,800 operations on 2 ids, linearizable", v)
	}
	corrupted := false
	for i, op := range h.ops {
		out := op.Output.(Output)
		if op.Input.(Input).Kind == OpRead && out.Result == Found && op.Return != math.MaxInt64 {
			out.Plant = ContendedPlant(out.Plant.ID, 99) // never sent
			h.ops[i].Output = out
			corrupted = true
			break
		}
	}
	if !corrupted {
		t.Fatal("no read found a plant: nothing to corrupt")
	}
	if v := h.Check(0, ""); len(v.Illegal) != 1 {
		t.Fatalf("verdict %v on the corrupted history; want one id illegal", v)
	}
}

// TestTooLittle: a history of indeterminate answers is linearizable whatever
// the store did, so the check refuses it as proof; so it does a history that
// left a contended id untouched.
func TestTooLittle(t *testing.T) {
	create := Input{Kind: OpCreate, ID: 1, Plant: ContendedPlant(1, 0)}
	h := NewLinear(1)
	for i := range int64(10) {
		h.Record(0, create, 2*i, Output{}, 2*i+1) // 503 throughout
	}
	if v := h.Check(0, ""); !v.OK() || v.TooLittle(1) == "" {
		t.Fatalf("verdict %v, too little %q; want linearizable and refused as proof", v, v.TooLittle(1))
	}
	h = NewLinear(2)
	for i := range int64(200) {
		out := Output{Result: Found, Plant: ContendedPlant(1, 0)}
		if i == 0 {
			out = Output{Result: Created}
		}
		if i == 1 {
			out = Output{} // one indeterminate in 200: fine
		}
		in := Input{Kind: OpRead, ID: 1}
		if i == 0 {
			in = create
		}
		h.Record(0, in, 2*i, out, 2*i+1)
	}
	if v := h.Check(0, ""); !v.OK() || v.TooLittle(1) != "" || v.TooLittle(2) == "" {
		t.Fatalf("verdict %v: too little for 1 id %q, for 2 ids %q; want enough for 1, not for 2 (id 2 untouched)", v, v.TooLittle(1), v.TooLittle(2))
	}
}
