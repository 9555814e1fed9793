package store_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
)

// TestRedisFull: a Redis over its maxmemory with noeviction (the chart's
// setting) refuses every command that may grow its data. A create then fails
// with plant.ErrFull (507), not as unavailable (503: a retry would not help)
// nor as a bug (500), and writes nothing: no key, no index entry, no event.
// Reads, lists, replays (acknowledged ones too) and deletes keep working, and a delete still records
// its event: the delete script's first write is a DEL, which Redis lets
// through, and after it the script may finish (docs/storage.md).
func TestRedisFull(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory-policy", "noeviction")
	raw := srv.Client()
	ctx := context.Background()
	rec := store.NewRecording()
	rec.Set(true)
	client, err := store.NewRedisClient(store.RedisOptions{
		Addrs: []string{srv.Addr}, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	plain := store.NewRedis(client, "plantstore:").RecordEvents(rec)
	// Without replicas an acknowledged create would time out waiting; on a
	// full store it must not get that far.
	acked := store.NewRedis(client, "plantstore:").RecordEvents(rec).WaitForReplicas(1, 200*time.Millisecond)

	const stored = 50
	for id := int64(1); id <= stored; id++ {
		if _, _, err := plain.Create(ctx, plant.Plant{ID: id, Name: "plant " + strconv.FormatInt(id, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	used := srv.InfoInt("memory", "used_memory")
	// Below what is used: full from the next write on.
	if err := raw.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used/2, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, raw)

	for name, repo := range map[string]*store.Redis{"create": plain, "acknowledged create": acked} {
		_, _, err := repo.Create(ctx, plant.Plant{ID: 1000, Name: "one too many"})
		if !errors.Is(err, plant.ErrFull) || errors.Is(err, plant.ErrUnavailable) {
			t.Fatalf("%s on a full store: err = %v, want plant.ErrFull and not ErrUnavailable", name, err)
		}
	}
	if after := snapshot(t, raw); after != before {
		t.Fatalf("refused creates changed the store: %s, was %s", after, before)
	}

	if p, outcome, err := plain.Create(ctx, plant.Plant{ID: 7, Name: "plant 7"}); err != nil || outcome != plant.Replayed || p.Name != "plant 7" {
		t.Errorf("replay on a full store = %v, %v, %v; want plant 7 replayed", p, outcome, err)
	}
	// The acknowledged replay writes the plant again (DEL first): past the
	// full store, it is refused only for want of a replica here.
	if _, _, err := acked.Create(ctx, plant.Plant{ID: 7, Name: "plant 7"}); !errors.Is(err, store.ErrNotReplicated) {
		t.Errorf("acknowledged replay on a full store: %v, want ErrNotReplicated (no replica), not full", err)
	}
	if p, err := plain.Get(ctx, 3); err != nil || p.Name != "plant 3" {
		t.Errorf("get on a full store = %v, %v", p, err)
	}
	if page, err := plain.List(ctx, nil, 100); err != nil || len(page.Plants) != stored {
		t.Errorf("list on a full store: %d plants, %v; want %d", len(page.Plants), err, stored)
	}
	events := streamLength(t, raw)
	if err := plain.Delete(ctx, 5); err != nil {
		t.Fatalf("delete on a full store: %v", err)
	}
	if _, err := plain.Get(ctx, 5); !errors.Is(err, plant.ErrNotFound) {
		t.Errorf("plant 5 after its delete: %v, want not found", err)
	}
	if got := streamLength(t, raw); got != events+1 {
		t.Errorf("outbox events after the delete = %d, want %d (its plant.deleted recorded)", got, events+1)
	}

	// Room again: creates work, as they did.
	if err := raw.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if _, outcome, err := plain.Create(ctx, plant.Plant{ID: 1000, Name: "one too many"}); err != nil || outcome != plant.Created {
		t.Fatalf("create once memory is freed: %v, %v", outcome, err)
	}
}

// snapshot is the store's keys and the total of its outbox streams' lengths.
func snapshot(t *testing.T, c *redis.Client) string {
	t.Helper()
	n, err := c.DBSize(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return "keys=" + strconv.FormatInt(n, 10) + " events=" + strconv.FormatInt(streamLength(t, c), 10)
}

func streamLength(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	ctx := context.Background()
	var total int64
	iter := c.Scan(ctx, 0, "*", 0).Iterator()
	for iter.Next(ctx) {
		if typ, err := c.Type(ctx, iter.Val()).Result(); err == nil && typ == "stream" {
			total += c.XLen(ctx, iter.Val()).Val()
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}
