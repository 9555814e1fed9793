// Package ha runs the built service on highly available Redis deployments
// through their failures: a Sentinel failover under load (with and without
// --redis-min-replica-acks) and a three-master Cluster whose node is killed
// and restarted under load. Each scenario starts its own redis-servers and
// service, asserts exact figures and prints one CHAOS line (make chaos
// collects them). By default each runs a bounded variant;
// PLANTSTORE_CHAOS=full runs them longer.
package ha

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store"
)

// binary is the service built once for the whole package.
var binary string

func TestMain(m *testing.M) { servicetest.LongMain(m, &binary) }

// storedPlant is a plant as the service stores it in Redis.
type storedPlant struct {
	Name string `json:"name"`
	Tag  string `json:"tag,omitempty"`
}

// lostPlants reads every acknowledged plant back through client and returns
// the ids Redis does not hold exactly as sent.
func lostPlants(t *testing.T, client redis.Cmdable, acked map[int64]string) []int64 {
	t.Helper()
	var lost []int64
	for id, body := range acked {
		var sent storedPlant
		if err := json.Unmarshal([]byte(body), &sent); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(sent)
		got, err := client.Get(t.Context(), store.PlantKey("plantstore:", id)).Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("reading plant %d back: %v", id, err)
		}
		if got != string(want) {
			lost = append(lost, id)
		}
	}
	return lost
}

// checkAnswers fails the test for any answer other than a 200 or a
// well-formed 503 with Retry-After (no transport error, no 500), and returns
// the count of 503s.
func checkAnswers(t *testing.T, res *servicetest.LoadResult) int {
	t.Helper()
	bad := 0
	for _, rec := range res.Records {
		switch {
		case rec.Err != nil:
			bad++
			if bad <= 5 {
				t.Errorf("request %d: %v", rec.ID, rec.Err)
			}
		case rec.Status == http.StatusServiceUnavailable:
			if rec.Code != 50301 || rec.RetryAfter == "" || rec.BodyErr != nil {
				bad++
				if bad <= 5 {
					t.Errorf("request %d: 503 with code %d, Retry-After %q (%v): %s", rec.ID, rec.Code, rec.RetryAfter, rec.BodyErr, rec.Reply)
				}
			}
		case rec.Status != http.StatusOK:
			bad++
			if bad <= 5 {
				t.Errorf("request %d: status %d: %s", rec.ID, rec.Status, rec.Reply)
			}
		}
	}
	return res.Count(http.StatusServiceUnavailable)
}

// firstOK returns the first request started at or after from that answered
// 200, and when its answer came.
func firstOK(res *servicetest.LoadResult, from time.Time) (time.Time, bool) {
	var at time.Time
	for _, rec := range res.Records {
		if rec.Status == http.StatusOK && !rec.Start.Before(from) {
			if end := rec.Start.Add(rec.Latency); at.IsZero() || end.Before(at) {
				at = end
			}
		}
	}
	return at, !at.IsZero()
}

// ms formats a duration in whole milliseconds for the CHAOS lines.
func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// failover drives a Sentinel failover whose master dies holding writes no
// replica has: openWindow stops the replicas and cuts their links,
// killMaster SIGKILLs the master and lets the replicas go on, and promoted
// waits for the sentinels to name another master.
type failover struct {
	group    *redistest.SentinelGroup
	master   *redistest.Server
	replicas []*redistest.Server
}

func newFailover(g *redistest.SentinelGroup) failover {
	return failover{group: g, master: g.Servers[0], replicas: g.Servers[1:]}
}

// openWindow returns when the replicas' links were cut: from then on the
// master's writes reach no replica.
func (f failover) openWindow(ctx context.Context, t *testing.T) time.Time {
	t.Helper()
	for _, r := range f.replicas {
		r.Pause()
	}
	if err := f.master.Client().Do(ctx, "client", "kill", "type", "replica").Err(); err != nil {
		t.Fatalf("cutting the replicas' links: %v", err)
	}
	return time.Now()
}

// killMaster returns when the master has exited.
func (f failover) killMaster() time.Time {
	f.master.Stop() // SIGKILL, and waits for the exit
	killed := time.Now()
	for _, r := range f.replicas {
		r.Resume()
	}
	return killed
}

// promoted waits up to 20 s for the sentinels to name a master other than
// the killed one, and returns it (nil if none was named).
func (f failover) promoted(ctx context.Context) *redistest.Server {
	var promoted *redistest.Server
	servicetest.Eventually(20*time.Second, 50*time.Millisecond, func() bool {
		m, err := f.group.CurrentMaster(ctx)
		if err == nil && m != f.master {
			promoted = m
			return true
		}
		return false
	})
	return promoted
}
