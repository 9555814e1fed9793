package ha

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store/storetest"
)

// envNetns marks the test process that runs in a network namespace of its
// own (inOwnNetns).
const envNetns = "PLANTSTORE_TEST_NETNS"

// inOwnNetns runs the calling test again in a new network namespace
// (unshare --net, as root, loopback up) and reports whether this process is
// that run: there the test may give loopback addresses other than 127.0.0.1
// to its servers and cut them apart with iptables, none of it seen outside.
// The outer run passes when the inner one does, its output relayed.
func inOwnNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(envNetns) == "1" {
		return true
	}
	cmd := exec.Command("unshare", "--net", "--", "sh", "-c", `ip link set lo up && exec "$@"`, "sh",
		os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envNetns+"=1", servicetest.EnvBinary+"="+binary)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("a network namespace for the test (unshare --net, as root): %v", err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if line := lines.Text(); strings.HasPrefix(line, "CHAOS ") {
			fmt.Println(line) // the scenario's figures, for make chaos
		} else {
			t.Log(line)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the run in its own network namespace failed: %v", err)
	}
	return false
}

// cut drops every packet between the addresses of side a and those of side
// b, both ways (iptables, in the test's network namespace); heal removes it.
func cut(t *testing.T, a, b []string) {
	t.Helper()
	for _, x := range a {
		for _, y := range b {
			for _, rule := range [][]string{{"-s", x, "-d", y}, {"-s", y, "-d", x}} {
				iptables(t, append(append([]string{"-A", "OUTPUT"}, rule...), "-j", "DROP")...)
			}
		}
	}
}

func heal(t *testing.T) { iptables(t, "-F", "OUTPUT") }

func iptables(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
		t.Fatalf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// TestChaosPartition is Jepsen's partition of a Sentinel set, at the level of
// processes: the master and its Sentinel (127.0.1.1) are cut off from the two
// replicas and their Sentinels (127.0.1.2, .3), both ways, while they all
// live on. Service A reaches only the cut-off Sentinel (an API pod in the
// master's zone), service B the two others; both serve callers that create,
// read, delete and list the same few ids. The majority promotes a replica;
// once the cut heals, the old master rejoins as its replica. Every operation
// is recorded and each id's history checked for linearizability: A must not
// answer a plant deleted through B, nor one whose create never reached a
// replica, and no acknowledged write may be lost.
func TestChaosPartition(t *testing.T) {
	if !inOwnNetns(t) {
		return
	}
	minority, majority := []string{"127.0.1.1"}, []string{"127.0.1.2", "127.0.1.3"}
	// The chart's guard on every server: a master no replica has heard from
	// for a second refuses writes.
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{
		Replicas: 2, Hosts: append(minority, majority...), DownAfter: 2 * time.Second,
		Extra: []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "1"},
	})
	flags := []string{"--redis-master-name", g.MasterName, "--redis-min-replica-acks", "1", "--redis-replica-ack-timeout", "200ms",
		"--store-timeout", "2s", "--redis-read-timeout", "1s", "--redis-write-timeout", "1s"}
	sentinels := g.SentinelAddrs()
	a := servicetest.Start(t, binary, servicetest.Options{RedisAddr: sentinels[0], Extra: flags})
	b := servicetest.Start(t, binary, servicetest.Options{RedisAddr: strings.Join(sentinels[1:], ","), Extra: flags})

	const perSide = 4
	callers := make([]storetest.Caller, 2*perSide)
	for i := range callers {
		callers[i] = []*servicetest.Service{a, b}[i/perSide].Caller()
	}
	before, partitioned, after := 2*time.Second, 8*time.Second, 6*time.Second
	var promoted string
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(before)
		cut(t, minority, majority)
		ctx, cancel := context.WithTimeout(context.Background(), partitioned)
		defer cancel()
		for ctx.Err() == nil && promoted == "" {
			if m, err := majorityMaster(ctx, g); err == nil && !strings.HasPrefix(m, minority[0]+":") {
				promoted = m
			}
			time.Sleep(100 * time.Millisecond)
		}
		<-ctx.Done()
		heal(t)
	})
	h := storetest.Contend(t.Context(), storetest.ContendOptions{
		Callers: callers, IDs: 8, Plants: 3, Pause: 20 * time.Millisecond, Timeout: 3 * time.Second,
		Duration: before + partitioned + after,
	})
	wg.Wait()
	if promoted == "" {
		t.Fatalf("the majority's Sentinels promoted no replica within the %v of the partition", partitioned)
	}
	v := h.Check(20*time.Second, "TestChaosPartition")
	servicetest.Report(t, "partition", "promoted %s; %v", promoted, v)
	if !v.OK() {
		t.Errorf("history not linearizable: %v", v)
		for _, path := range v.Visualizations {
			t.Logf("porcupine's picture: %s", path)
		}
	}
	if v.Ops-v.Indeterminate < 200 {
		t.Errorf("only %d determinate answers: the history proves too little (%v)", v.Ops-v.Indeterminate, v)
	}
}

// majorityMaster is the master a Sentinel of the majority names.
func majorityMaster(ctx context.Context, g *redistest.SentinelGroup) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: g.Sentinels[1].Addr, MaxRetries: -1})
	defer c.Close()
	hp, err := c.GetMasterAddrByName(ctx, g.MasterName).Result()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}
