package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/plantstore/plantstore/internal/plant"
)

// extremes are the ids whose order a store is most likely to get wrong:
// int64's bounds, the sign change, and the first integers a double cannot
// hold (a sorted-set score would merge 2^53 and 2^53+1).
var extremes = []int64{
	math.MinInt64, math.MinInt64 + 1, -(1 << 53) - 1, -(1 << 53), -1, 0, 1,
	1 << 53, 1<<53 + 1, 1<<53 + 2, math.MaxInt64 - 1, math.MaxInt64,
}

// runResource holds the cases of reading, listing and deleting (contract
// section 9).
func runResource(t *testing.T, newRepo func(t *testing.T) Repository) {
	ctx := context.Background()

	t.Run("get of a missing id is not found", func(t *testing.T) {
		r := newRepo(t)
		for _, id := range []int64{0, 1, math.MinInt64, math.MaxInt64} {
			if p, err := r.Get(ctx, id); !errors.Is(err, plant.ErrNotFound) {
				t.Fatalf("Get(%d) on an empty store = %+v, %v; want ErrNotFound", id, p, err)
			}
		}
	})

	t.Run("delete removes, frees the id, and a second delete is not found", func(t *testing.T) {
		r := newRepo(t)
		mustCreate(t, r, plant.Plant{ID: 7, Name: "Basil", Tag: ptr("herb")})
		mustCreate(t, r, plant.Plant{ID: 8, Name: "Mint"})
		if err := r.Delete(ctx, 7); err != nil {
			t.Fatalf("Delete(7) = %v", err)
		}
		if _, err := r.Get(ctx, 7); !errors.Is(err, plant.ErrNotFound) {
			t.Fatalf("Get(7) after Delete = %v, want ErrNotFound", err)
		}
		if err := r.Delete(ctx, 7); !errors.Is(err, plant.ErrNotFound) {
			t.Fatalf("second Delete(7) = %v, want ErrNotFound", err)
		}
		if err := r.Delete(ctx, 9); !errors.Is(err, plant.ErrNotFound) {
			t.Fatalf("Delete(9) of a never-created id = %v, want ErrNotFound", err)
		}
		if got := ids(t, listAll(t, r, 100)); !slices.Equal(got, []int64{8}) {
			t.Fatalf("listed %v after deleting 7, want [8]", got)
		}
		// The id is free: any body creates it again.
		again := plant.Plant{ID: 7, Name: "Thai basil"}
		if _, outcome, err := r.Create(ctx, again); err != nil || outcome != plant.Created {
			t.Fatalf("Create after Delete = %v, %v; want Created", outcome, err)
		}
		if p, err := r.Get(ctx, 7); err != nil || !p.SameContent(again) {
			t.Fatalf("Get(7) after re-create = %+v, %v", p, err)
		}
		if got := ids(t, listAll(t, r, 100)); !slices.Equal(got, []int64{7, 8}) {
			t.Fatalf("listed %v after re-creating 7, want [7 8]", got)
		}
	})

	t.Run("list is empty on an empty store", func(t *testing.T) {
		r := newRepo(t)
		page, err := r.List(ctx, nil, 20)
		if err != nil || len(page.Plants) != 0 || page.More {
			t.Fatalf("List on an empty store = %+v, %v; want no plants, no more", page, err)
		}
	})

	t.Run("list orders every int64 exactly, negatives first", func(t *testing.T) {
		r := newRepo(t)
		// Created out of order, with a tag on every other plant.
		for i, id := range []int{5, 0, 11, 3, 9, 1, 7, 2, 10, 4, 8, 6} {
			p := plant.Plant{ID: extremes[id], Name: fmt.Sprint("p", extremes[id])}
			if i%2 == 0 {
				p.Tag = ptr(fmt.Sprint("t", i))
			}
			mustCreate(t, r, p)
		}
		for _, limit := range []int{1, 2, 5, len(extremes), 100} {
			got := listAll(t, r, limit)
			if !slices.Equal(ids(t, got), extremes) {
				t.Fatalf("limit %d: listed %v, want %v", limit, ids(t, got), extremes)
			}
			for _, p := range got {
				stored, err := r.Get(ctx, p.ID)
				if err != nil || !stored.SameContent(p) {
					t.Fatalf("listed %+v, but Get = %+v, %v", p, stored, err)
				}
			}
		}
	})

	t.Run("a page holds at most limit plants and says whether more follow", func(t *testing.T) {
		r := newRepo(t)
		for id := range int64(45) {
			mustCreate(t, r, plant.Plant{ID: id*37 - 800, Name: "p"})
		}
		var pages []int
		var after *int64
		for {
			page, err := r.List(ctx, after, 20)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, len(page.Plants))
			if !page.More {
				break
			}
			if page.Cursor != page.Plants[len(page.Plants)-1].ID {
				t.Fatalf("cursor %d is not the last listed id %d", page.Cursor, page.Plants[len(page.Plants)-1].ID)
			}
			c := page.Cursor
			after = &c
		}
		if !slices.Equal(pages, []int{20, 20, 5}) {
			t.Fatalf("page sizes %v, want [20 20 5]", pages)
		}
		// Exactly limit plants left: the page is full and nothing follows.
		last := int64(20*37 - 800)
		page, err := r.List(ctx, &last, 24)
		if err != nil || len(page.Plants) != 24 || page.More {
			t.Fatalf("List(after %d, 24) = %d plants, more %v, %v; want 24, no more", last, len(page.Plants), page.More, err)
		}
		top := int64(math.MaxInt64)
		if page, err := r.List(ctx, &top, 20); err != nil || len(page.Plants) != 0 || page.More {
			t.Fatalf("List after MaxInt64 = %+v, %v; want empty", page, err)
		}
		absent := int64(-799) // between two stored ids: the page starts after it
		if page, err := r.List(ctx, &absent, 1); err != nil || len(page.Plants) != 1 || page.Plants[0].ID != -763 {
			t.Fatalf("List after absent id -799 = %+v, %v; want [-763]", page, err)
		}
	})

	t.Run("returned pages do not alias the store", func(t *testing.T) {
		r := newRepo(t)
		mustCreate(t, r, plant.Plant{ID: 1, Name: "Aloe", Tag: ptr("orig")})
		page, err := r.List(ctx, nil, 10)
		if err != nil || len(page.Plants) != 1 {
			t.Fatalf("List = %+v, %v", page, err)
		}
		*page.Plants[0].Tag = "changed"
		if p, _ := r.Get(ctx, 1); *p.Tag != "orig" {
			t.Fatalf("stored tag = %q after changing a listed plant", *p.Tag)
		}
	})
}

// listAll walks every page of r, limit plants at a time.
func listAll(t *testing.T, r Repository, limit int) []plant.Plant {
	t.Helper()
	var all []plant.Plant
	var after *int64
	for range 10000 {
		page, err := r.List(context.Background(), after, limit)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(page.Plants) > limit {
			t.Fatalf("a page of limit %d held %d plants", limit, len(page.Plants))
		}
		all = append(all, page.Plants...)
		if !page.More {
			return all
		}
		c := page.Cursor
		after = &c
	}
	t.Fatal("the walk did not end")
	return nil
}

func ids(t *testing.T, ps []plant.Plant) []int64 {
	t.Helper()
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}
