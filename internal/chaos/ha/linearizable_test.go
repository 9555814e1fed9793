package ha

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store/storetest"
)

// TestChaosLinearizable: twelve clients on two service processes create,
// read, delete and list plants on the same eight ids, 1 ms apart, on each
// Redis topology, with and without --redis-batch; every operation is
// recorded and each id's history checked for linearizability against the
// contract's model (storetest.Linear, porcupine). The HTTP layer, the
// batcher and go-redis's retries are all in the path. No fault is injected:
// a healthy store must answer as one copy of each plant would.
func TestChaosLinearizable(t *testing.T) {
	// No fault is injected, so the timeouts are generous: a busy machine's
	// stall makes an answer late, not indeterminate (each indeterminate
	// operation widens the checker's search).
	acks := []string{"--redis-min-replica-acks", "1", "--redis-replica-ack-timeout", "1s"}
	timeouts := []string{"--store-timeout", "3s", "--redis-read-timeout", "2s", "--redis-write-timeout", "2s"}
	for _, tc := range []struct {
		scenario string
		// start starts the topology and returns the service's --redis-addr,
		// its extra flags, and a function that empties the store.
		start func(t *testing.T) (addr string, extra []string, flush func())
	}{
		{"lin-single", func(t *testing.T) (string, []string, func()) {
			s := redistest.Start(t)
			return s.Addr, nil, flushAll(t, s)
		}},
		{"lin-replica", func(t *testing.T) (string, []string, func()) {
			s := redistest.Start(t)
			redistest.StartReplica(t, s)
			redistest.WaitReplicas(t, s, 1, 10*time.Second)
			return s.Addr, acks, flushAll(t, s)
		}},
		{"lin-sentinel", func(t *testing.T) (string, []string, func()) {
			g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Replicas: 2})
			return strings.Join(g.SentinelAddrs(), ","), append([]string{"--redis-master-name", g.MasterName}, acks...), flushAll(t, g.Servers[0])
		}},
		{"lin-cluster", func(t *testing.T) (string, []string, func()) {
			c := redistest.StartCluster(t, 3)
			return strings.Join(c.Addrs(), ","), nil, flushAll(t, c.Masters...)
		}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			addr, extra, flush := tc.start(t)
			var figures []string
			for _, batch := range []string{"--redis-batch=true", "--redis-batch=false"} {
				flush()
				opts := servicetest.Options{RedisAddr: addr, Extra: slices.Concat([]string{batch}, timeouts, extra)}
				// Both get the same token: servicetest names it after the test.
				a, b := servicetest.Start(t, binary, opts), servicetest.Start(t, binary, opts)
				callers := make([]storetest.Caller, 12)
				for i := range callers {
					callers[i] = []*servicetest.Service{a, b}[i%2].Caller()
				}
				h := storetest.Contend(t.Context(), storetest.ContendOptions{
					Callers: callers, IDs: 8, Plants: 3, Pause: time.Millisecond,
					Duration: servicetest.Pick(1500*time.Millisecond, 30*time.Second),
				})
				v := storetest.CheckLinearizable(t, h)
				figures = append(figures, batch[2:]+": "+v.String())
				a.Kill()
				b.Kill()
			}
			servicetest.Report(t, tc.scenario, "%s", strings.Join(figures, "; "))
		})
	}
}

// flushAll returns a function that empties every server given.
func flushAll(t *testing.T, servers ...*redistest.Server) func() {
	return func() {
		for _, s := range servers {
			if err := s.Client().FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
