package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
)

// writeLegacy stores plants exactly as version 1.0.0 did: SET NX of the JSON
// under <prefix>plant:{<id>}.
func writeLegacy(t *testing.T, client redis.UniversalClient, plants map[int64]string) {
	t.Helper()
	for id, value := range plants {
		if err := client.SetNX(context.Background(), store.LegacyPlantKey("plantstore:", id), value, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigrateLegacy: plants written by 1.0.0 are served by 1.1.0 after one
// run of the migration, on a single node and on a Cluster; a second run
// changes nothing; an id taken meanwhile by another plant is reported and its
// 1.0.0 key kept.
func TestMigrateLegacy(t *testing.T) {
	for _, topology := range []string{"single", "cluster"} {
		t.Run(topology, func(t *testing.T) {
			var opts store.RedisOptions
			var flush func()
			if topology == "single" {
				srv := redistest.Start(t)
				opts.Addrs = []string{srv.Addr}
				flush = func() { srv.Client().FlushAll(context.Background()) }
			} else {
				c := redistest.StartCluster(t, 3)
				opts.Addrs = c.Addrs()
				flush = func() {
					for _, m := range c.Masters {
						m.Client().FlushAll(context.Background())
					}
				}
			}
			flush()
			client := newClient(t, opts)
			legacy := map[int64]string{}
			for i := range int64(300) {
				legacy[i*7919-1000] = fmt.Sprintf(`{"name":"p%d"}`, i)
			}
			legacy[math.MinInt64] = `{"name":"min","tag":""}`
			legacy[math.MaxInt64] = `{"name":"max","tag":"t"}`
			legacy[42] = `{"name":"old"}`
			writeLegacy(t, client, legacy)
			// Not plants of 1.0.0: left alone.
			client.Set(context.Background(), "plantstore:plant:{007}", `{"name":"x"}`, 0)
			client.Set(context.Background(), "other:plant:{1}", `{"name":"x"}`, 0)

			r := store.NewRedis(client, "plantstore:")
			ctx := context.Background()
			// A 1.1.0 replica took id 42 with another plant before the migration.
			if _, _, err := r.Create(ctx, plant.Plant{ID: 42, Name: "new"}); err != nil {
				t.Fatal(err)
			}

			var out bytes.Buffer
			opts.KeyPrefix = "plantstore:"
			err := store.RunMigration(ctx, opts, &out)
			if err == nil || !strings.Contains(err.Error(), "42") {
				t.Fatalf("migration with a conflict on 42: %v, want an error naming it", err)
			}
			if want := fmt.Sprintf("%d plants moved to the 1.1.0 layout, 0 already there, 1 conflicts", len(legacy)-1); !strings.Contains(out.String(), want) {
				t.Fatalf("report %q, want %q", out.String(), want)
			}
			for id, value := range legacy {
				p, err := r.Get(ctx, id)
				if id == 42 {
					if err != nil || p.Name != "new" {
						t.Fatalf("Get(42) = %+v, %v; the 1.1.0 plant must stay", p, err)
					}
					if n, _ := client.Exists(ctx, store.LegacyPlantKey("plantstore:", 42)).Result(); n != 1 {
						t.Fatal("the conflicting 1.0.0 key was removed")
					}
					continue
				}
				if err != nil || !strings.Contains(value, `"`+p.Name+`"`) {
					t.Fatalf("Get(%d) = %+v, %v; 1.0.0 stored %s", id, p, err, value)
				}
				if n, _ := client.Exists(ctx, store.LegacyPlantKey("plantstore:", id)).Result(); n != 0 {
					t.Fatalf("1.0.0 key of %d still there", id)
				}
			}
			if p, _ := r.Get(ctx, math.MinInt64); p.Tag == nil || *p.Tag != "" {
				t.Fatalf("the empty tag of MinInt64 became %v", p.Tag)
			}
			var listed []int64
			var after *int64
			for {
				page, err := r.List(ctx, after, 100)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range page.Plants {
					listed = append(listed, p.ID)
				}
				if !page.More {
					break
				}
				after = &page.Cursor
			}
			if len(listed) != len(legacy) || !slices.IsSorted(listed) {
				t.Fatalf("listed %d plants (sorted %v), want the %d of 1.0.0", len(listed), slices.IsSorted(listed), len(legacy))
			}
			for _, k := range []string{"plantstore:plant:{007}", "other:plant:{1}"} {
				if n, _ := client.Exists(ctx, k).Result(); n != 1 {
					t.Fatalf("%s, not a 1.0.0 plant, was touched", k)
				}
			}

			// Resolved by the operator: the run completes and changes nothing else.
			client.Del(ctx, store.LegacyPlantKey("plantstore:", 42))
			out.Reset()
			if err := store.RunMigration(ctx, opts, &out); err != nil || !strings.Contains(out.String(), "0 plants moved") {
				t.Fatalf("second run: %v, %q", err, out.String())
			}
		})
	}
}

func TestMigrateLegacyUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	err := store.RunMigration(context.Background(), store.RedisOptions{Addrs: []string{srv.Addr}, KeyPrefix: "plantstore:"}, &bytes.Buffer{})
	if !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("migration with Redis down: %v, want ErrUnavailable", err)
	}
}
