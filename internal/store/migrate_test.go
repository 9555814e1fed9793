package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
			err := store.RunMigration(ctx, opts, store.MigrationOptions{}, &out)
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
			if err := store.RunMigration(ctx, opts, store.MigrationOptions{}, &out); err != nil || !strings.Contains(out.String(), "0 plants moved") {
				t.Fatalf("second run: %v, %q", err, out.String())
			}
		})
	}
}

func TestMigrateLegacyUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	err := store.RunMigration(context.Background(), store.RedisOptions{Addrs: []string{srv.Addr}, KeyPrefix: "plantstore:"}, store.MigrationOptions{}, &bytes.Buffer{})
	if !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("migration with Redis down: %v, want ErrUnavailable", err)
	}
}

// legacyKeys counts the 1.0.0 keys left under the test's prefix.
func legacyKeys(t *testing.T, client redis.UniversalClient) int {
	t.Helper()
	keys, err := client.Keys(context.Background(), "plantstore:plant:{*}").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// TestMigrateSettle: with --settle, plants a 1.0.0 replica keeps writing
// while the migration runs are all moved before it returns, and it returns
// only once no 1.0.0 key appeared for the settle time.
func TestMigrateSettle(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client()
	client.FlushAll(context.Background())
	opts := store.RedisOptions{Addrs: []string{srv.Addr}, KeyPrefix: "plantstore:"}
	writeLegacy(t, client, map[int64]string{-1: `{"name":"before"}`, 1 << 60: `{"name":"before"}`})

	// The 1.0.0 replica: a plant every 5 ms for 600 ms, then gone.
	const writing, settle = 600 * time.Millisecond, time.Second
	var written []int64
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		for i := int64(0); time.Since(start) < writing; i++ {
			id := 1000 + i
			if err := client.SetNX(context.Background(), store.LegacyPlantKey("plantstore:", id), fmt.Sprintf(`{"name":"w%d"}`, i), 0).Err(); err != nil {
				t.Error(err)
				return
			}
			written = append(written, id)
			time.Sleep(5 * time.Millisecond)
		}
	}()

	var out bytes.Buffer
	err := store.RunMigration(context.Background(), opts, store.MigrationOptions{Settle: settle, Pause: 20 * time.Millisecond}, &out)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("settling migration: %v\n%s", err, out.String())
	}
	select {
	case <-done:
	default:
		t.Fatalf("the migration settled after %v while the 1.0.0 writer was still writing:\n%s", elapsed, out.String())
	}
	if elapsed < writing+settle {
		t.Errorf("returned after %v, before the writer's %v plus the settle time %v", elapsed, writing, settle)
	}
	if n := legacyKeys(t, client); n != 0 {
		t.Fatalf("%d 1.0.0 keys left:\n%s", n, out.String())
	}
	r := store.NewRedis(client, "plantstore:")
	for _, id := range append(written, -1, 1<<60) {
		if _, err := r.Get(context.Background(), id); err != nil {
			t.Fatalf("Get(%d) after the migration: %v", id, err)
		}
	}
	report := out.String()
	if want := fmt.Sprintf("migrate-store: %d plants moved to the 1.1.0 layout, 0 already there, 0 conflicts (", len(written)+2); !strings.Contains(report, want) {
		t.Errorf("report lacks %q:\n%s", want, report)
	}
	if want := "; settled: no new 1.0.0 key for 1s)\n"; !strings.HasSuffix(report, want) {
		t.Errorf("report does not end with %q:\n%s", want, report)
	}
	// Several passes found plants (one line each); the quiet ones printed nothing.
	if n := strings.Count(report, ": pass "); n < 2 || strings.Contains(report, ": 0 moved, 0 already there, 0 conflicts") {
		t.Errorf("%d pass lines, want 2 or more, none of an empty pass:\n%s", n, report)
	}
	t.Logf("%v, %d plants written meanwhile:\n%s", elapsed, len(written), report)
}

// TestMigrateSettleFound: a store with 1.0.0 keys settles for SettleFound
// even when Settle is shorter (a GitOps sync cannot tell an upgrade from
// 1.0.0 from an install); a store without any settles for Settle alone.
func TestMigrateSettleFound(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client()
	opts := store.RedisOptions{Addrs: []string{srv.Addr}, KeyPrefix: "plantstore:"}
	const settle, found = 50 * time.Millisecond, 800 * time.Millisecond
	m := store.MigrationOptions{Settle: settle, SettleFound: found, Pause: 20 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		legacy map[int64]string
		at     time.Duration // the shortest run
		report string
		ends   string
	}{
		{"no 1.0.0 key", nil, settle, "0 plants moved to the 1.1.0 layout, 0 already there, 0 conflicts (", "settled: no new 1.0.0 key for 50ms)\n"},
		{"1.0.0 keys", map[int64]string{1: `{"name":"a"}`, 2: `{"name":"b"}`}, found, "2 plants moved to the 1.1.0 layout, 0 already there, 0 conflicts (", "settled: no new 1.0.0 key for 800ms)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client.FlushAll(context.Background())
			writeLegacy(t, client, tc.legacy)
			var out bytes.Buffer
			start := time.Now()
			if err := store.RunMigration(context.Background(), opts, m, &out); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if elapsed := time.Since(start); elapsed < tc.at {
				t.Errorf("returned after %v, before %v", elapsed, tc.at)
			}
			if !strings.Contains(out.String(), tc.report) || !strings.HasSuffix(out.String(), tc.ends) {
				t.Errorf("report lacks %q or does not end with %q:\n%s", tc.report, tc.ends, out.String())
			}
		})
	}
}

// TestMigrateSettleZero: without --settle, one pass, whatever is written
// after it, and today's one-line report.
func TestMigrateSettleZero(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client()
	client.FlushAll(context.Background())
	writeLegacy(t, client, map[int64]string{1: `{"name":"a"}`, 2: `{"name":"b"}`})
	passes := 0
	r := store.NewRedis(client, "plantstore:")
	start := time.Now()
	res, n, err := r.SettleLegacy(context.Background(), store.MigrationOptions{Pause: time.Hour}, func(int, store.MigrationResult, error) {
		passes++
		writeLegacy(t, client, map[int64]string{3: `{"name":"after the pass"}`})
	})
	if err != nil || n != 1 || passes != 1 || res.Moved != 2 || time.Since(start) > 10*time.Second {
		t.Fatalf("SettleLegacy with Settle 0: %+v, %d passes (%d calls), %v, after %v; want 2 moved in one pass at once", res, n, passes, err, time.Since(start))
	}
	if n := legacyKeys(t, client); n != 1 {
		t.Fatalf("%d 1.0.0 keys left, want the one written after the only pass", n)
	}
	var out bytes.Buffer
	opts := store.RedisOptions{Addrs: []string{srv.Addr}, KeyPrefix: "plantstore:"}
	if err := store.RunMigration(context.Background(), opts, store.MigrationOptions{}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "migrate-store: 1 plants moved to the 1.1.0 layout, 0 already there, 0 conflicts\n"; out.String() != want {
		t.Fatalf("report %q, want %q", out.String(), want)
	}
}

// TestMigrateSettleConflict: a conflict does not keep the migration from
// settling (it is counted once), the other plants are moved, and the
// command then fails naming it, its 1.0.0 key kept.
func TestMigrateSettleConflict(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client()
	client.FlushAll(context.Background())
	r := store.NewRedis(client, "plantstore:")
	if _, _, err := r.Create(context.Background(), plant.Plant{ID: 42, Name: "new"}); err != nil {
		t.Fatal(err)
	}
	writeLegacy(t, client, map[int64]string{42: `{"name":"old"}`, 7: `{"name":"seven"}`})
	var out bytes.Buffer
	opts := store.RedisOptions{Addrs: []string{srv.Addr}, KeyPrefix: "plantstore:"}
	start := time.Now()
	err := store.RunMigration(context.Background(), opts, store.MigrationOptions{Settle: 300 * time.Millisecond, Pause: 20 * time.Millisecond}, &out)
	if err == nil || !strings.Contains(err.Error(), "42") {
		t.Fatalf("settling migration with a conflict on 42: %v, want an error naming it\n%s", err, out.String())
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("took %v to settle", time.Since(start))
	}
	if want := "1 plants moved to the 1.1.0 layout, 0 already there, 1 conflicts ("; !strings.Contains(out.String(), want) {
		t.Fatalf("report %q, want %q", out.String(), want)
	}
	if n, _ := client.Exists(context.Background(), store.LegacyPlantKey("plantstore:", 42)).Result(); n != 1 {
		t.Fatal("the conflicting 1.0.0 key was removed")
	}
	if p, err := r.Get(context.Background(), 42); err != nil || p.Name != "new" {
		t.Fatalf("Get(42) = %+v, %v; the 1.1.0 plant must stay", p, err)
	}
	if _, err := r.Get(context.Background(), 7); err != nil {
		t.Fatalf("Get(7): %v", err)
	}
}

// TestMigrateSettleCancel: a cancelled settling migration (SIGTERM) returns
// at once with the context's error, while 1.0.0 keys keep appearing or not.
func TestMigrateSettleCancel(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client()
	client.FlushAll(context.Background())
	opts := store.RedisOptions{Addrs: []string{srv.Addr}, KeyPrefix: "plantstore:"}
	for _, writer := range []bool{false, true} {
		t.Run(fmt.Sprintf("writer=%v", writer), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if writer {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := int64(0); ; i++ {
						select {
						case <-stop:
							return
						case <-time.After(2 * time.Millisecond):
						}
						client.SetNX(context.Background(), store.LegacyPlantKey("plantstore:", i), `{"name":"x"}`, 0)
					}
				}()
			}
			time.AfterFunc(300*time.Millisecond, cancel)
			var out bytes.Buffer
			start := time.Now()
			err := store.RunMigration(ctx, opts, store.MigrationOptions{Settle: time.Hour, Pause: 50 * time.Millisecond}, &out)
			elapsed := time.Since(start)
			close(stop)
			wg.Wait()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled migration: %v, want context.Canceled\n%s", err, out.String())
			}
			if elapsed > 5*time.Second {
				t.Fatalf("returned %v after the start, long after the cancellation at 300ms", elapsed)
			}
			if !strings.Contains(out.String(), "plants moved to the 1.1.0 layout") || strings.Contains(out.String(), "settled") {
				t.Fatalf("report of an interrupted migration: %q", out.String())
			}
		})
	}
}

// TestMigrateSettleRedisRestart: while settling, a pass that finds Redis
// down is retried after the pause (and restarts the settle time); the
// plants written once it is back are moved.
func TestMigrateSettleRedisRestart(t *testing.T) {
	srv := redistest.Start(t)
	srv.Client().FlushAll(context.Background())
	opts := store.RedisOptions{Addrs: []string{srv.Addr}, KeyPrefix: "plantstore:", MaxRetries: -1, DialTimeout: 200 * time.Millisecond}
	srv.Stop()
	var out bytes.Buffer
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		errc <- store.RunMigration(context.Background(), opts, store.MigrationOptions{Settle: 500 * time.Millisecond, Pause: 50 * time.Millisecond}, &out)
	}()
	time.Sleep(400 * time.Millisecond)
	srv.Restart()
	restarted := time.Since(start)
	writeLegacy(t, srv.Client(), map[int64]string{5: `{"name":"after the restart"}`})
	if err := <-errc; err != nil {
		t.Fatalf("settling migration across a Redis restart: %v\n%s", err, out.String())
	}
	if elapsed := time.Since(start); elapsed < restarted+500*time.Millisecond {
		t.Errorf("settled %v after the start, less than the settle time after Redis came back (%v)", elapsed, restarted)
	}
	if !strings.Contains(out.String(), "; failed, again in 50ms: plant store unavailable") || !strings.Contains(out.String(), "migrate-store: 1 plants moved") {
		t.Fatalf("report %q, want failed passes, then the plant moved", out.String())
	}
	if _, err := store.NewRedis(srv.Client(), "plantstore:").Get(context.Background(), 5); err != nil {
		t.Fatalf("Get(5): %v", err)
	}
}

// TestFillLegacy: FillLegacy leaves plants as 1.0.0 stored them, keys and
// values, so the migration moves every one and the store reads them.
func TestFillLegacy(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client()
	tag := "tropical"
	plantOf := func(i int) plant.Plant {
		p := plant.Plant{ID: int64(i)*977 - 5000, Name: fmt.Sprintf("p%d", i)}
		if i%2 == 0 {
			p.Tag = &tag
		}
		return p
	}
	const n = 5003 // a full pipeline and a part
	if err := store.FillLegacy(ctx, rdb, "plantstore:", n, plantOf); err != nil {
		t.Fatal(err)
	}
	if got := rdb.Get(ctx, store.LegacyPlantKey("plantstore:", plantOf(0).ID)).Val(); got != `{"name":"p0","tag":"tropical"}` {
		t.Errorf("1.0.0 value of plant 0: %q", got)
	}
	r := store.NewRedis(rdb, "plantstore:")
	res, err := r.MigrateLegacy(ctx)
	if err != nil || res.Moved != n || res.Already != 0 || len(res.Conflicts) != 0 {
		t.Fatalf("MigrateLegacy = %+v, %v; want %d moved", res, err, n)
	}
	for _, i := range []int{0, 1, n - 1} {
		if got, err := r.Get(ctx, plantOf(i).ID); err != nil || !got.SameContent(plantOf(i)) {
			t.Errorf("plant %d after the migration: %+v, %v", i, got, err)
		}
	}
	if k := legacyKeys(t, rdb); k != 0 {
		t.Errorf("%d 1.0.0 keys left", k)
	}
}
