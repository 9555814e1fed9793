package store_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/longtest"
	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/store/storetest"
)

func newRedisRepo(t *testing.T, addr string) *store.Redis {
	t.Helper()
	client, err := store.NewRedisClient(store.RedisOptions{
		Addrs: []string{addr}, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return store.NewRedis(client, "plantstore:")
}

func TestRedisConformance(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) storetest.Repository {
		if err := srv.Client().FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		return newRedisRepo(t, srv.Addr)
	})
}

func TestRedisKeyLayout(t *testing.T) {
	srv := redistest.Start(t)
	r := newRedisRepo(t, srv.Addr)
	ctx := context.Background()
	tag := "tropical"
	if _, _, err := r.Create(ctx, plant.Plant{ID: -42, Name: "Monstera", Tag: &tag}); err != nil {
		t.Fatal(err)
	}
	// -42 is 0xff..d6 as uint64: shard 6.
	got, err := srv.Client().Get(ctx, "plantstore:plants:{s06.2}:-42").Result()
	if err != nil {
		t.Fatalf("plant not at the documented key: %v", err)
	}
	if want := `{"name":"Monstera","tag":"tropical"}`; got != want {
		t.Fatalf("stored value = %s, want %s", got, want)
	}
	members, err := srv.Client().ZRangeWithScores(ctx, "plantstore:plants:{s06.2}:index", 0, -1).Result()
	if err != nil || len(members) != 1 || members[0].Member != "7fffffffffffffd6" || members[0].Score != 0 {
		t.Fatalf("index of shard 6 = %v, %v; want the one member 7fffffffffffffd6 with score 0", members, err)
	}
	keys, err := srv.Client().Keys(ctx, "*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %v, %v; want the plant and its index only", keys, err)
	}
	// A plant and its index share a hash tag, so one Cluster slot.
	for id := int64(-40); id < 40; id++ {
		if tagOf(r.Key(id)) != tagOf(store.PlantIndexKey("plantstore:", id)) {
			t.Fatalf("plant %d: key %s and index %s in different slots", id, r.Key(id), store.PlantIndexKey("plantstore:", id))
		}
	}
	if err := r.Delete(ctx, -42); err != nil {
		t.Fatal(err)
	}
	if n, err := srv.Client().DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("%d keys after deleting the only plant (%v); an empty index must vanish too", n, err)
	}
}

// TestFill: Fill leaves plants as creates do, the same keys, values and
// index members, so the store reads and pages through them.
func TestFill(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client()
	tag := "tropical"
	plantOf := func(i int) plant.Plant {
		p := plant.Plant{ID: int64(i) - 20, Name: "Monstera"}
		if i%2 == 0 {
			p.Tag = &tag
		}
		return p
	}
	created := store.NewRedis(rdb, "created:")
	for i := range 45 {
		if _, _, err := created.Create(ctx, plantOf(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Fill(ctx, rdb, "filled:", 45, plantOf); err != nil {
		t.Fatal(err)
	}
	for i := range 45 {
		id := plantOf(i).ID
		want, got := rdb.Get(ctx, store.PlantKey("created:", id)).Val(), rdb.Get(ctx, store.PlantKey("filled:", id)).Val()
		if got == "" || got != want {
			t.Errorf("plant %d: filled %q, created %q", id, got, want)
		}
	}
	for s := range store.Shards {
		want := rdb.ZRangeWithScores(ctx, store.PlantIndexKey("created:", int64(s)), 0, -1).Val()
		got := rdb.ZRangeWithScores(ctx, store.PlantIndexKey("filled:", int64(s)), 0, -1).Val()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("index of shard %d: filled %v, created %v", s, got, want)
		}
	}
	page, err := store.NewRedis(rdb, "filled:").List(ctx, nil, 100)
	if err != nil || len(page.Plants) != 45 || page.Plants[0].ID != -20 || page.Plants[44].ID != 24 || page.More {
		t.Fatalf("a page of the filled store: %d plants, more %v, %v; want ids -20 to 24", len(page.Plants), page.More, err)
	}
}

// The index members of the int64 range's ends, and members that are not one.
func TestIndexMember(t *testing.T) {
	for id, m := range map[int64]string{math.MinInt64: "0000000000000000", -1: "7fffffffffffffff", 0: "8000000000000000", math.MaxInt64: "ffffffffffffffff"} {
		if got := store.IndexMember(id); got != m {
			t.Errorf("IndexMember(%d) = %s, want %s", id, got, m)
		}
		if got, err := store.ParseIndexMember(m); err != nil || got != id {
			t.Errorf("ParseIndexMember(%s) = %d, %v, want %d", m, got, err, id)
		}
	}
	for _, m := range []string{"", "800000000000000", "80000000000000000", "800000000000000g"} {
		if _, err := store.ParseIndexMember(m); err == nil {
			t.Errorf("ParseIndexMember(%q): no error", m)
		}
	}
}

func tagOf(key string) string {
	return key[strings.Index(key, "{"):strings.Index(key, "}")]
}

// TestRedisShardSlots: shard s's keys hash into the s-th sixteenth of the
// Cluster slots (CLUSTER KEYSLOT of a real node), so equal slot ranges hold
// equal shares of the shards.
func TestRedisShardSlots(t *testing.T) {
	c := redistest.StartCluster(t, 1)
	node := c.Masters[0].Client()
	r := store.NewRedis(nil, "plantstore:")
	for s := range store.Shards {
		slot, err := node.ClusterKeySlot(context.Background(), r.IndexKey(s)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if lo, hi := int64(s)*16384/store.Shards, int64(s+1)*16384/store.Shards; slot < lo || slot >= hi {
			t.Errorf("shard %d: key %s in slot %d, want %d..%d", s, r.IndexKey(s), slot, lo, hi-1)
		}
		if id := int64(s); tagOf(r.Key(id)) != tagOf(r.IndexKey(s)) || tagOf(r.Key(id-store.Shards)) != tagOf(r.IndexKey(s)) {
			t.Errorf("plant %d is not in shard %d", id, s)
		}
	}
}

// TestRedisConformanceSentinel and TestRedisConformanceCluster run the whole
// suite through the two other client modes, on real servers.
func TestRedisConformanceSentinel(t *testing.T) {
	longtest.Mark(t, "several processes or Redis servers")
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	storetest.Run(t, func(t *testing.T) storetest.Repository {
		if err := g.Servers[0].Client().FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		return store.NewRedis(newClient(t, store.RedisOptions{Addrs: g.SentinelAddrs(), MasterName: g.MasterName}), "plantstore:")
	})
}

func TestRedisConformanceCluster(t *testing.T) {
	longtest.Mark(t, "several processes or Redis servers")
	c := redistest.StartCluster(t, 3)
	storetest.Run(t, func(t *testing.T) storetest.Repository {
		for _, m := range c.Masters {
			if err := m.Client().FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		}
		return store.NewRedis(newClient(t, store.RedisOptions{Addrs: c.Addrs()}), "plantstore:")
	})
}

func TestRedisUnavailableAndBack(t *testing.T) {
	srv := redistest.Start(t)
	r := newRedisRepo(t, srv.Addr)
	ctx := context.Background()
	if err := r.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Stop()

	tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := r.Create(tctx, plant.Plant{ID: 1, Name: "x"})
	if !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Create with Redis down: %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Create with Redis down took %v, beyond its deadline", took)
	}
	if err := r.Ping(ctx); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Ping with Redis down: %v, want ErrUnavailable", err)
	}

	srv.Restart()
	if _, outcome, err := r.Create(ctx, plant.Plant{ID: 1, Name: "x"}); err != nil || outcome != plant.Created {
		t.Fatalf("Create after Redis returned = %v, %v", outcome, err)
	}
}

func TestRedisErrorReplyIsNotUnavailability(t *testing.T) {
	srv := redistest.Start(t)
	r := newRedisRepo(t, srv.Addr)
	ctx := context.Background()
	// A key of the wrong type makes SET ... GET fail with a WRONGTYPE reply:
	// a data problem, not an outage, so it must not be reported as 503.
	if err := srv.Client().LPush(ctx, r.Key(5), "x").Err(); err != nil {
		t.Fatal(err)
	}
	_, _, err := r.Create(ctx, plant.Plant{ID: 5, Name: "x"})
	if err == nil || errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Create over a list key: %v, want a non-unavailable error", err)
	}
}

// TestNewRedisClientModes checks which client the options select: one
// address a single node, several (or --redis-cluster) a Cluster, a master
// name Sentinel; and that TLS options are checked.
// TestNewRedisClientSendsNothingRefused: a connection's set-up sends no
// command that Redis refuses (go-redis's identity and maintenance
// notification handshakes are off), so Redis's error counts stay the
// service's own.
func TestNewRedisClientSendsNothingRefused(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	// One connection, set up before the counts are reset, reads them.
	admin := srv.Client().Conn()
	defer admin.Close()
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	c, err := store.NewRedisClient(store.RedisOptions{Addrs: []string{srv.Addr}, PoolSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		conn := c.(*redis.Client).Conn()
		if err := conn.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		_ = conn.Close()
	}
	info, err := admin.Info(ctx, "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(info, "errorstat_") {
		t.Errorf("Redis refused commands of the client's connections:\n%s", info)
	}
}

func TestNewRedisClientModes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       store.RedisOptions
		cluster bool
	}{
		{"single", store.RedisOptions{Addrs: []string{"127.0.0.1:1"}}, false},
		{"cluster by addresses", store.RedisOptions{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}}, true},
		{"cluster by flag", store.RedisOptions{Addrs: []string{"127.0.0.1:1"}, Cluster: true}, true},
		{"sentinel", store.RedisOptions{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}, MasterName: "m"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := store.NewRedisClient(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, isCluster := c.(*redis.ClusterClient); isCluster != tc.cluster {
				t.Fatalf("%T: cluster = %v, want %v", c, isCluster, tc.cluster)
			}
			// Small buffers: plants are small (see connBuffer); a Cluster
			// gets no pipeline pool of its own.
			var buffers [4]int
			switch c := c.(type) {
			case *redis.Client:
				o := c.Options()
				buffers = [4]int{o.ReadBufferSize, o.WriteBufferSize, o.PipelineReadBufferSize, o.PipelineWriteBufferSize}
			case *redis.ClusterClient:
				o := c.Options()
				buffers = [4]int{o.ReadBufferSize, o.WriteBufferSize, o.PipelineReadBufferSize, o.PipelineWriteBufferSize}
			}
			want := [4]int{16 << 10, 16 << 10, 32 << 10, 32 << 10}
			if tc.cluster {
				want[2], want[3] = 0, 0
			}
			if buffers != want {
				t.Fatalf("buffers (read, write, pipeline read, pipeline write) %v, want %v", buffers, want)
			}
		})
	}
	if _, err := store.NewRedisClient(store.RedisOptions{}); err == nil {
		t.Fatal("no address accepted")
	}
	if _, err := store.NewRedisClient(store.RedisOptions{Addrs: []string{"x:1"}, TLS: true, TLSCAFile: t.TempDir() + "/none"}); err == nil {
		t.Fatal("a missing TLS CA file accepted")
	}
}
