package chaos

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store"
)

// chartRedisArgs are the persistence settings of the chart's Redis
// (charts/plantstore/templates/_redis.tpl, plantstore.redis.conf), with the
// appendfsync policy read from the chart's values.yaml, so that the scenario
// tests the durability the chart promises, whatever its default becomes.
func chartRedisArgs(t *testing.T) []string {
	t.Helper()
	values, err := os.ReadFile(filepath.Join("..", "..", "charts", "plantstore", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^  appendfsync: (\w+)$`).FindSubmatch(values)
	if m == nil {
		t.Fatal("no redis.appendfsync in charts/plantstore/values.yaml")
	}
	return []string{
		"--appendonly", "yes", "--appendfilename", "appendonly.aof", "--appenddirname", "appendonlydir",
		"--appendfsync", string(m[1]), "--aof-use-rdb-preamble", "yes", "--maxmemory-policy", "noeviction",
	}
}

// storedPlant is a plant as the service stores it in Redis.
type storedPlant struct {
	Name string `json:"name"`
	Tag  string `json:"tag,omitempty"`
}

// storedForm is the value Redis holds for a plant the service answered
// with body.
func storedForm(t *testing.T, body string) string {
	t.Helper()
	var sent storedPlant
	if err := json.Unmarshal([]byte(body), &sent); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(sent)
	return string(want)
}

// TestChaosRedisKill kills Redis (SIGKILL) under load and restarts it on the
// same port and data directory. A crash of Redis must lose no acknowledged
// plant (with the chart's appendfsync always, the AOF is written and fsynced
// before the reply); during the outage requests fail fast with 503, Retry-After and 50301,
// /readyz keeps passing, creates succeed again soon after Redis returns,
// and nothing leaks. Once as configured by default (--redis-batch:
// pipelines shared by concurrent requests), once with one round trip per
// command.
func TestChaosRedisKill(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		extra    []string
	}{
		{"redis-kill", nil},
		{"redis-kill-unbatched", []string{"--redis-batch=false"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) { redisKill(t, tc.scenario, tc.extra) })
	}
}

func redisKill(t *testing.T, scenario string, extra []string) {
	const workers = 8
	before, outage, after := servicetest.Pick(time.Second, 5*time.Second),
		servicetest.Pick(2*time.Second, 15*time.Second), servicetest.Pick(time.Second, 5*time.Second)

	redis := redistest.Start(t, chartRedisArgs(t)...)
	s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: extra})

	// Baseline after a warm-up with the same concurrency, its connections closed.
	servicetest.StartLoad(s, servicetest.LoadOptions{Workers: workers, Duration: 500 * time.Millisecond, FirstID: 1 << 40}).Wait()
	base := quiet(t, s)

	load := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: workers})
	time.Sleep(before)

	redis.Stop() // SIGKILL, and waits for the exit
	killed := time.Now()
	ready := startProbe(20*time.Millisecond, s.Ready)
	time.Sleep(outage)
	restarting := time.Now()
	redis.Restart() // returns once Redis answers PING, the AOF loaded
	restarted := time.Now()
	time.Sleep(after)
	res := load.Stop()
	samples := ready.Stop()

	// /readyz: passing for the whole outage, so that the pods stay in the
	// Service and answer 503 + Retry-After rather than leave clients with
	// connection errors (the store is shared: readiness does not follow it).
	for _, p := range samples {
		if p.err != nil || p.status != http.StatusOK {
			t.Errorf("/readyz %v after the kill = %d %v, want 200", p.at.Sub(killed), p.status, p.err)
		}
	}
	// Creates succeed again within 5 s of Redis's return.
	var recovery time.Duration
	recovered := false
	for _, rec := range res.Records {
		if rec.Status == http.StatusOK && rec.Start.After(restarted) {
			recovery, recovered = rec.Start.Add(rec.Latency).Sub(restarted), true
			break
		}
	}
	if !recovered || recovery > 5*time.Second {
		t.Errorf("no create succeeded within 5 s of Redis's return (recovered %v, %v)", recovered, recovery)
	}

	// Every answer is a 200 or a well-formed fast 503; the ones wholly inside
	// the outage are all 503.
	limit := storeTimeout + clientMargin
	var maxOutage time.Duration
	for _, rec := range res.Records {
		end := rec.Start.Add(rec.Latency)
		switch {
		case rec.Err != nil:
			t.Errorf("request %d: %v", rec.ID, rec.Err)
		case rec.Status == http.StatusServiceUnavailable:
			if rec.Code != 50301 || rec.RetryAfter == "" || rec.BodyErr != nil {
				t.Errorf("request %d: 503 with code %d, Retry-After %q (%v): %s", rec.ID, rec.Code, rec.RetryAfter, rec.BodyErr, rec.Reply)
			}
			maxOutage = max(maxOutage, rec.Latency)
			if rec.Latency > limit {
				t.Errorf("request %d: 503 after %v, beyond the %v store timeout + %v margin", rec.ID, rec.Latency, storeTimeout, clientMargin)
			}
		case rec.Status != http.StatusOK:
			t.Errorf("request %d: status %d: %s", rec.ID, rec.Status, rec.Reply)
		case rec.Start.After(killed) && end.Before(restarting):
			t.Errorf("request %d answered 200 while Redis was down", rec.ID)
		}
	}
	if res.Count(http.StatusServiceUnavailable) == 0 {
		t.Errorf("no request answered 503 during a %v outage: %v", outage, res)
	}

	// The service's own measure of the 503s, without the client's and the
	// kernel's scheduling: every one within the store timeout + the margin.
	families, _ := s.Metrics(t)
	within, total := histogramCount(families, "plantstore_http_request_duration_seconds", map[string]string{"code": "503"}, (storeTimeout + schedulingMargin).Seconds())
	if within != total || total == 0 {
		t.Errorf("the service measured %d of its %d 503s within %v", within, total, storeTimeout+schedulingMargin)
	}

	// Every acknowledged plant is in Redis, exactly as sent.
	acked := res.Acknowledged()
	client := redis.Client()
	lost := 0
	for id, body := range acked {
		want := storedForm(t, body)
		got, err := client.Get(t.Context(), store.PlantKey("plantstore:", id)).Result()
		if err != nil || got != want {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged plant %d: Redis has %q (%v), want %s", id, got, err, want)
			}
		}
	}

	// Back to baseline once the load's connections are closed.
	final, err := settle(t, s, base, workers)
	if err != nil {
		t.Errorf("after the load: %v\nbaseline %v\nnow      %v", err, base, final)
	}

	servicetest.Report(t, scenario, "requests=%d ok=%d 503=%d lost=%d/%d max_503_latency=%s create_recovery=%s goroutines=%g->%g fds=%g->%g pool=%g->%g%s",
		len(res.Records), res.Count(200), res.Count(503), lost, len(acked), ms(maxOutage), ms(recovery),
		base.Goroutines, final.Goroutines, base.OpenFDs, final.OpenFDs, base.PoolTotal, final.PoolTotal, s.Batching(t, extra))
	t.Logf("load: %v", res)
}
