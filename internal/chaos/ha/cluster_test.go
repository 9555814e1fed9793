package ha

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store"
)

// aof makes a node killed with SIGKILL and restarted keep every write it
// answered: appendfsync always writes (and fsyncs) the AOF before the reply.
// With everysec (the chart's setting) Redis also writes before replying,
// except while a background fsync is still running: then it postpones the
// write for up to 2 s and replies anyway, so a kill in that window loses up
// to 2 s of acknowledged writes. This scenario saw it happen (20 plants)
// whenever the loaded machine's disk was slow.
var aof = []string{"--appendonly", "yes", "--appendfsync", "always", "--aof-use-rdb-preamble", "yes"}

// TestChaosCluster runs the service on a three-master Redis Cluster (no
// replicas, AOF with appendfsync always, cluster-node-timeout 3000 ms) under
// load. (The contract
// suite runs on the same kind of cluster in internal/e2e, TestContract/
// cluster.) Under load it kills one master with SIGKILL and restarts it on its
// port, data and nodes.conf; then it moves slots from one master to another
// with redis-cli --cluster reshard. Answers are 200 or well-formed 503s (the
// killed node's slots, or the whole cluster once it is marked failed, answer
// 503 until it is back); no acknowledged plant may be missing afterwards;
// and the plants must be spread over the masters as the slots are. Once
// batched, as by default (go-redis splits each shared pipeline by slot and
// follows MOVED and ASK), once with one round trip per command.
func TestChaosCluster(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		extra    []string
	}{
		{"cluster", nil},
		{"cluster-unbatched", []string{"--redis-batch=false"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) { clusterChaos(t, tc.scenario, tc.extra) })
	}
}

func clusterChaos(t *testing.T, scenario string, extra []string) {
	phase := servicetest.Pick(time.Second, 5*time.Second)
	outage := servicetest.Pick(time.Second, 5*time.Second)
	slots := servicetest.Pick(500, 2000)

	c := redistest.StartCluster(t, 3, aof...)
	s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: strings.Join(c.Addrs(), ","), Extra: extra})
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = client.Close() })

	load := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: 8})
	time.Sleep(phase)

	// A node restart: SIGKILL, down for the outage, back on the same port
	// and data directory.
	victim := c.Masters[1]
	victim.Stop()
	killed := time.Now()
	time.Sleep(outage)
	victim.Restart()
	c.WaitOK(30 * time.Second)
	back := time.Now()
	time.Sleep(phase)

	// A resharding: slots move from the first master to the third, keys
	// migrating while the load writes.
	cli, err := redistest.CLI()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	reshardStart := time.Now()
	args := []string{"--cluster", "reshard", c.Masters[0].Addr,
		"--cluster-from", c.NodeID(c.Masters[0]), "--cluster-to", c.NodeID(c.Masters[2]),
		"--cluster-slots", strconv.Itoa(slots), "--cluster-yes"}
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		load.Stop()
		t.Fatalf("redis-cli %s: %v\n%.2000s", strings.Join(args, " "), err, out)
	}
	reshard := time.Since(reshardStart)
	c.WaitOK(30 * time.Second)
	time.Sleep(phase)
	res := load.Stop()

	n503 := checkAnswers(t, res)
	var n503restart, n503reshard int
	for _, rec := range res.Records {
		if rec.Status != http.StatusServiceUnavailable {
			continue
		}
		if rec.Start.Before(back) && rec.Start.Add(rec.Latency).After(killed) {
			n503restart++
		} else if !rec.Start.Before(reshardStart) {
			n503reshard++
		}
	}
	acked := res.Acknowledged()
	lost := lostPlants(t, client, acked)
	if len(lost) != 0 {
		t.Errorf("%d of %d acknowledged plants missing after the restart and the resharding: %v", len(lost), len(acked), first(lost, 10))
	}
	if len(acked) == 0 {
		t.Fatalf("no create acknowledged: %v", res)
	}

	// The plants are spread over the masters as the store's shards are
	// (store.Shards hash tags, a plant's shard its id modulo their number):
	// each master holds its shards' share of the plants, within 5 points.
	slotMap, err := redistest.SlotMap(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	owned := map[string]int{}
	for shard := range int64(store.Shards) {
		slot, err := client.ClusterKeySlot(ctx, store.PlantIndexKey("plantstore:", shard)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range slotMap {
			if int(slot) >= r.Start && int(slot) <= r.End {
				owned[r.Master]++
			}
		}
	}
	var shares []string
	var total int64
	counts := make([]int64, len(c.Masters))
	for i, m := range c.Masters {
		n, err := m.Client().DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		counts[i] = n
		total += n
	}
	for i, n := range counts {
		share, shardShare := float64(n)/float64(total), float64(owned[c.Masters[i].Addr])/store.Shards
		shares = append(shares, fmt.Sprintf("%.1f%%(shards %.1f%%)", 100*share, 100*shardShare))
		if share < shardShare-0.05 || share > shardShare+0.05 {
			t.Errorf("master %d holds %d of %d plants (%.1f%%) for %.1f%% of the shards", i, n, total, 100*share, 100*shardShare)
		}
	}
	if total < int64(len(acked)) {
		t.Errorf("the masters hold %d keys, fewer than the %d acknowledged plants", total, len(acked))
	}

	servicetest.Report(t, scenario, "requests=%d ok=%d 503=%d (restart %d, reshard %d) acked_lost=%d/%d outage=%s slots_moved=%d reshard=%s shares=%s%s",
		len(res.Records), res.Count(http.StatusOK), n503, n503restart, n503reshard, len(lost), len(acked), ms(back.Sub(killed)), slots, ms(reshard), strings.Join(shares, "/"), s.Batching(t, extra))
	t.Logf("load: %v", res)
}
