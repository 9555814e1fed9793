package chaos

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
)

// rateLimitTimeout is the --rate-limit-timeout the scenario runs with.
const rateLimitTimeout = 100 * time.Millisecond

// TestChaosLimiterRedisDown takes the rate limiter's Redis away under load
// (the store's Redis stays up): first killed (connections refused), then
// paused (nothing answers, so each decision times out). The limiter fails
// open: every request is served 200, none waits much past
// --rate-limit-timeout, each is counted in plantstore_ratelimit_fail_open_total,
// and the log says so without a line per request. Once the limiter's Redis
// is back, the limits apply again.
func TestChaosLimiterRedisDown(t *testing.T) {
	const workers = 4
	phase := servicetest.Pick(2*time.Second, 10*time.Second)

	storeRedis := redistest.Start(t)
	limitRedis := redistest.Start(t)
	const token = "chaos-limiter-token"
	tokens := filepath.Join(t.TempDir(), "tokens")
	// A limit far above the load: no request is refused for its rate, so
	// every answer but a 200 is a failure of the scenario.
	if err := os.WriteFile(tokens, []byte(token+" name=chaos rate=1000000/s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: storeRedis.Addr, NoTokens: true,
		Extra: append([]string{"--auth-tokens-file", tokens, "--rate-limit-redis-addr", limitRedis.Addr,
			"--rate-limit-timeout", rateLimitTimeout.String()}, patientStore...)})
	s.Token = token

	// limited waits (up to 2 s: the limiter's client finds its pooled
	// connections dead one request at a time) for the limit to apply again.
	limited := func(when string) {
		t.Helper()
		var r servicetest.Reply
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			r = s.Do(t, http.MethodGet, "/plants?limit=1", "", nil)
			if r.Status == http.StatusOK && r.Header.Get("RateLimit") != "" && r.Header.Get("RateLimit-Policy") == `"client";q=1000000;w=1` {
				return
			}
		}
		t.Errorf("%s: GET /plants %d, RateLimit %q, RateLimit-Policy %q; want the limit applied within 2 s", when, r.Status,
			r.Header.Get("RateLimit"), r.Header.Get("RateLimit-Policy"))
	}
	limited("before the outage")

	var records []servicetest.Record
	var pausedMax time.Duration
	run := func(name string, first int64) {
		res := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: workers, Duration: phase, FirstID: first}).Wait()
		for _, rec := range res.Records {
			if rec.Err != nil || rec.Status != http.StatusOK {
				t.Errorf("%s: request %d: %d %v %s", name, rec.ID, rec.Status, rec.Err, rec.Reply)
			}
		}
		if name == "paused" {
			pausedMax = res.Max(nil)
		}
		records = append(records, res.Records...)
	}

	limitRedis.Stop() // SIGKILL: connections refused
	run("killed", 1<<40)
	limitRedis.Restart()
	limited("after the restart")
	limitRedis.Pause() // SIGSTOP: every decision waits out the timeout
	run("paused", 2<<40)
	limitRedis.Resume()
	limited("after the pause")

	// The service's own count: every request of the outage let through.
	families, _ := s.Metrics(t)
	failOpen := servicetest.Value(families, "plantstore_ratelimit_fail_open_total")
	if int(failOpen) < len(records) {
		t.Errorf("plantstore_ratelimit_fail_open_total = %g, want at least the %d requests of the outage", failOpen, len(records))
	}
	// Each 200 of the pause waited for the limiter at most its timeout, not
	// for the store timeout (5 s) or longer: the service's own histogram,
	// bound 2.5 s, a margin for a busy machine, where a few of a paused
	// limiter's requests have taken just over 1 s.
	within, total := histogramCount(families, "plantstore_http_request_duration_seconds", map[string]string{"code": "200"}, 2.5)
	if within != total {
		t.Errorf("the service measured %d of its %d 200s beyond 2.5 s", total-within, total)
	}
	// Logged, but not once a request: one line per 10 s at most.
	lines := 0
	for _, line := range s.Logs.All() {
		var entry struct {
			Msg      string `json:"msg"`
			Requests int    `json:"requests_since_last_report"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && strings.Contains(entry.Msg, "fail open") {
			lines++
		}
	}
	if lines == 0 || lines > 2+int(2*phase/(10*time.Second)) {
		t.Errorf("%d fail-open log lines for %d requests over %v, want 1 per 10 s", lines, len(records), 2*phase)
	}

	servicetest.Report(t, "limiter-redis-down", "requests=%d ok=%d fail_open=%g log_lines=%d max_latency_paused=%s rate_limit_timeout=%s",
		len(records), countOK(records), failOpen, lines, ms(pausedMax), ms(rateLimitTimeout))
}

func countOK(records []servicetest.Record) int {
	n := 0
	for _, r := range records {
		if r.Status == http.StatusOK {
			n++
		}
	}
	return n
}
