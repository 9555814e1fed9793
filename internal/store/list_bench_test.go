package store

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
)

// BenchmarkListPage times one page of GET /plants's store call at three
// store sizes, from the start and from a cursor in the middle: a page costs
// the same whatever the size (docs/storage.md). make bench-store runs it.
func BenchmarkListPage(b *testing.B) {
	sizes := []int{1_000, 100_000, 1_000_000}
	b.Run("store=memory", func(b *testing.B) {
		for _, n := range sizes {
			m := NewMemory()
			for i := range n {
				m.plants.ReplaceOrInsert(plant.Plant{ID: spread(i), Name: "plant " + strconv.Itoa(i)})
			}
			benchPages(b, m, n)
		}
	})
	b.Run("store=redis", func(b *testing.B) {
		srv := redistest.Start(b)
		client := redis.NewClient(&redis.Options{Addr: srv.Addr})
		b.Cleanup(func() { _ = client.Close() })
		r := NewRedis(client, "plantstore:")
		stored := 0
		for _, n := range sizes {
			fill(b, r, stored, n)
			stored = n
			benchPages(b, r, n)
		}
	})
}

// spread maps 0..n-1 to ids over the whole int64 range, negatives included,
// in no particular order of creation.
func spread(i int) int64 { return int64(uint64(i)*0x9E3779B97F4A7C15) / 2 }

// fill writes plants from..to-1 as creates leave them, pipelined (Fill): a
// million creates one at a time take minutes.
func fill(b *testing.B, r *Redis, from, to int) {
	b.Helper()
	start := time.Now()
	err := Fill(context.Background(), r.client, r.prefix, to-from, func(i int) plant.Plant {
		return plant.Plant{ID: spread(from + i), Name: "plant " + strconv.Itoa(from+i)}
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("filled %d plants in %v", to-from, time.Since(start))
}

func benchPages(b *testing.B, repo plant.Repository, n int) {
	ctx := context.Background()
	middle := int64(0) // the ids spread evenly around 0
	for _, limit := range []int{20, 100} {
		for _, from := range []struct {
			name  string
			after *int64
		}{{"first", nil}, {"middle", &middle}} {
			b.Run(fmt.Sprintf("plants=%d/limit=%d/page=%s", n, limit, from.name), func(b *testing.B) {
				for b.Loop() {
					page, err := repo.List(ctx, from.after, limit)
					if err != nil || len(page.Plants) != limit || !page.More {
						b.Fatalf("List = %d plants, more %v, %v", len(page.Plants), page.More, err)
					}
				}
			})
		}
	}
}
