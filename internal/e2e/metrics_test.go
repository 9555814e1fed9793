package e2e

import (
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/plantstore/plantstore/internal/redistest"
)

const (
	httpDuration  = "plantstore_http_request_duration_seconds"
	storeDuration = "plantstore_store_operation_duration_seconds"
	openMetrics   = "application/openmetrics-text; version=1.0.0"
)

// durationBuckets are the classic bucket bounds every latency histogram must
// have: 100µs to 10s, with the SLO thresholds 0.1s and 0.25s among them.
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func labelsOf(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// family returns the named family, failing the test when it is missing or
// of another type.
func family(t testing.TB, families map[string]*dto.MetricFamily, name string, typ dto.MetricType) *dto.MetricFamily {
	t.Helper()
	mf, ok := families[name]
	if !ok {
		t.Fatalf("metric %s is missing", name)
	}
	if mf.GetType() != typ {
		t.Fatalf("metric %s is a %v, want %v", name, mf.GetType(), typ)
	}
	return mf
}

// series is a histogram series' method, route and code labels.
type series struct{ method, route, code string }

func (s series) String() string {
	return fmt.Sprintf("{method=%q,route=%q,code=%q}", s.method, s.route, s.code)
}

// requestCounts returns the observation count of every series of the HTTP
// duration histogram.
func requestCounts(t testing.TB, families map[string]*dto.MetricFamily) map[series]uint64 {
	t.Helper()
	mf := family(t, families, httpDuration, dto.MetricType_HISTOGRAM)
	out := make(map[series]uint64)
	for _, m := range mf.GetMetric() {
		l := labelsOf(m)
		if len(l) != 3 {
			t.Errorf("%s series with labels %v, want exactly method, route and code", httpDuration, l)
		}
		k := series{l["method"], l["route"], l["code"]}
		if _, dup := out[k]; dup {
			t.Errorf("%s series %v twice", httpDuration, k)
		}
		out[k] = m.GetHistogram().GetSampleCount()
	}
	return out
}

// byLabel returns a counter or gauge family's values by one label.
func byLabel(t testing.TB, mf *dto.MetricFamily, label string) map[string]float64 {
	t.Helper()
	out := make(map[string]float64)
	for _, m := range mf.GetMetric() {
		v := m.GetCounter().GetValue()
		if mf.GetType() == dto.MetricType_GAUGE {
			v = m.GetGauge().GetValue()
		}
		out[labelsOf(m)[label]] = v
	}
	return out
}

func formatCounts[K comparable, V any](m map[K]V) string {
	lines := make([]string, 0, len(m))
	for k, v := range m {
		lines = append(lines, fmt.Sprintf("  %v = %v", k, v))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// checkBuckets asserts a histogram family's classic buckets are exactly
// durationBuckets (plus +Inf).
func checkBuckets(t testing.TB, mf *dto.MetricFamily) {
	t.Helper()
	for _, m := range mf.GetMetric() {
		var bounds []float64
		for _, b := range m.GetHistogram().GetBucket() {
			if ub := b.GetUpperBound(); ub < 1e308 { // leave out +Inf
				bounds = append(bounds, ub)
			}
		}
		if !slices.Equal(bounds, durationBuckets) {
			t.Errorf("%s%v buckets %v, want %v", mf.GetName(), labelsOf(m), bounds, durationBuckets)
		}
	}
	if len(mf.GetMetric()) == 0 {
		t.Errorf("%s has no series to check the buckets of", mf.GetName())
	}
}

// checkConventions asserts every family has HELP text and a conventional
// name: counters end in _total and nothing else does; durations are in
// seconds; nothing is untyped.
func checkConventions(t testing.TB, families map[string]*dto.MetricFamily) {
	t.Helper()
	for name, mf := range families {
		if strings.TrimSpace(mf.GetHelp()) == "" {
			t.Errorf("metric %s has no HELP text", name)
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			if !strings.HasSuffix(name, "_total") {
				t.Errorf("counter %s does not end in _total", name)
			}
		case dto.MetricType_UNTYPED:
			t.Errorf("metric %s is untyped", name)
		default:
			if strings.HasSuffix(name, "_total") {
				t.Errorf("%v %s ends in _total, which is for counters", mf.GetType(), name)
			}
		}
		if strings.Contains(name, "duration") && !strings.HasSuffix(name, "_seconds") {
			t.Errorf("duration metric %s is not in seconds (name ends in _seconds)", name)
		}
		if strings.HasPrefix(name, "plantstore_") && strings.Contains(name, "_milliseconds") {
			t.Errorf("metric %s uses milliseconds, not the base unit", name)
		}
	}
}

// TestMetricsCountEveryOutcome drives every kind of answer through the
// binary on real Redis and checks the exact counts /metrics reports.
func TestMetricsCountEveryOutcome(t *testing.T) {
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr})

	expect := func(r reply, status int) {
		t.Helper()
		if r.Status != status {
			t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
		}
	}
	for i := 1; i <= 3; i++ {
		expect(s.Post(t, fmt.Sprintf(`{"id": %d, "name": "plant %d"}`, i, i)), 200)
	}
	expect(s.Post(t, `{"id": 1, "name": "plant 1"}`), 200)    // replay
	expect(s.Post(t, `{"id": 1, "name": "other name"}`), 409) // conflict
	expect(s.Post(t, `{"id": 4,`), 400)                       // malformed JSON
	expect(s.Post(t, `{"name": "no id"}`), 400)               // missing field
	noAuth := map[string]string{"Authorization": ""}
	expect(s.Do(t, http.MethodPost, "/plants", `{"id": 5, "name": "x"}`, noAuth), 401)
	expect(s.Do(t, http.MethodPost, "/plants", `{"id": 5, "name": "x"}`, map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}), 401)
	for range 2 {
		expect(s.Do(t, http.MethodPost, "/plants", `{"id": 5, "name": "x"}`, map[string]string{"Authorization": "Bearer wrong-token"}), 401)
	}
	expect(s.Do(t, http.MethodGet, "/nope", "", nil), 404)
	expect(s.Do(t, http.MethodGet, "/plants/1/x", "", nil), 404)
	expect(s.Do(t, http.MethodPut, "/plants", `{"id": 5, "name": "x"}`, nil), 405)
	expect(s.Do(t, http.MethodGet, "/openapi.yaml", "", noAuth), 200)
	redis.Stop()
	for i := range 2 {
		expect(s.Post(t, fmt.Sprintf(`{"id": %d, "name": "x"}`, 10+i)), 503)
	}

	families, text := s.Metrics(t)

	t.Run("requests by method, route and code", func(t *testing.T) {
		want := map[series]uint64{
			{"POST", "/plants", "200"}:      4,
			{"POST", "/plants", "409"}:      1,
			{"POST", "/plants", "400"}:      2,
			{"POST", "/plants", "401"}:      4,
			{"GET", "unmatched", "404"}:     2,
			{"PUT", "/plants", "405"}:       1,
			{"GET", "/openapi.yaml", "200"}: 1,
			{"POST", "/plants", "503"}:      2,
		}
		got := requestCounts(t, families)
		if !maps.Equal(got, want) {
			t.Errorf("%s counts:\n%s\nwant:\n%s", httpDuration, formatCounts(got), formatCounts(want))
		}
		checkBuckets(t, family(t, families, httpDuration, dto.MetricType_HISTOGRAM))
	})

	t.Run("creations by outcome", func(t *testing.T) {
		got := byLabel(t, family(t, families, "plantstore_plant_creations_total", dto.MetricType_COUNTER), "outcome")
		want := map[string]float64{"created": 3, "replayed": 1, "conflict": 1}
		if !maps.Equal(got, want) {
			t.Errorf("plantstore_plant_creations_total:\n%s\nwant:\n%s", formatCounts(got), formatCounts(want))
		}
	})

	t.Run("auth failures by reason", func(t *testing.T) {
		got := byLabel(t, family(t, families, "plantstore_auth_failures_total", dto.MetricType_COUNTER), "reason")
		want := map[string]float64{"missing": 1, "malformed": 1, "rejected": 2, "expired": 0, "insufficient_scope": 0}
		if !maps.Equal(got, want) {
			t.Errorf("plantstore_auth_failures_total:\n%s\nwant:\n%s", formatCounts(got), formatCounts(want))
		}
		tokens := family(t, families, "plantstore_auth_tokens", dto.MetricType_GAUGE)
		if v := tokens.GetMetric()[0].GetGauge().GetValue(); v != 1 {
			t.Errorf("plantstore_auth_tokens = %v, want 1 (the tokens file holds one)", v)
		}
	})

	t.Run("store operations by outcome", func(t *testing.T) {
		mf := family(t, families, storeDuration, dto.MetricType_HISTOGRAM)
		got := make(map[string]uint64)
		for _, m := range mf.GetMetric() {
			l := labelsOf(m)
			got[l["operation"]+"/"+l["outcome"]] = m.GetHistogram().GetSampleCount()
		}
		// A conflict is an answer from the store: ok. Each 503 is one
		// unavailable create, whatever go-redis retried inside it.
		for k, want := range map[string]uint64{"create/ok": 5, "create/unavailable": 2, "create/error": 0} {
			if got[k] != want {
				t.Errorf("%s{%s} count = %d, want %d; all:\n%s", storeDuration, k, got[k], want, formatCounts(got))
			}
		}
		if got["ping/ok"] < 1 {
			t.Errorf("%s{ping,ok} count = %d: the readiness probe pinged at least once", storeDuration, got["ping/ok"])
		}
		checkBuckets(t, mf)
	})

	t.Run("nothing in flight", func(t *testing.T) {
		// The admin listener is not instrumented, so the scrape itself is
		// not counted.
		g := family(t, families, "plantstore_http_requests_in_flight", dto.MetricType_GAUGE)
		if v := g.GetMetric()[0].GetGauge().GetValue(); v != 0 {
			t.Errorf("plantstore_http_requests_in_flight = %v, want 0", v)
		}
	})

	t.Run("build info", func(t *testing.T) {
		mf := family(t, families, "plantstore_build_info", dto.MetricType_GAUGE)
		if len(mf.GetMetric()) != 1 {
			t.Fatalf("plantstore_build_info has %d series, want 1", len(mf.GetMetric()))
		}
		m := mf.GetMetric()[0]
		if m.GetGauge().GetValue() != 1 {
			t.Errorf("plantstore_build_info = %v, want 1", m.GetGauge().GetValue())
		}
		l := labelsOf(m)
		for _, k := range []string{"version", "revision", "goversion"} {
			if l[k] == "" {
				t.Errorf("plantstore_build_info has no %s label: %v", k, l)
			}
		}
	})

	t.Run("redis pool, runtime and process", func(t *testing.T) {
		for name, typ := range map[string]dto.MetricType{
			"plantstore_redis_pool_hits_total":              dto.MetricType_COUNTER,
			"plantstore_redis_pool_misses_total":            dto.MetricType_COUNTER,
			"plantstore_redis_pool_timeouts_total":          dto.MetricType_COUNTER,
			"plantstore_redis_pool_stale_connections_total": dto.MetricType_COUNTER,
			"plantstore_redis_pool_total_connections":       dto.MetricType_GAUGE,
			"plantstore_redis_pool_idle_connections":        dto.MetricType_GAUGE,
			"go_goroutines":                                 dto.MetricType_GAUGE,
			"process_resident_memory_bytes":                 dto.MetricType_GAUGE,
		} {
			family(t, families, name, typ)
		}
		if v := family(t, families, "plantstore_redis_pool_misses_total", dto.MetricType_COUNTER).GetMetric()[0].GetCounter().GetValue(); v < 1 {
			t.Errorf("plantstore_redis_pool_misses_total = %v: the first command had to dial", v)
		}
		if v := family(t, families, "process_resident_memory_bytes", dto.MetricType_GAUGE).GetMetric()[0].GetGauge().GetValue(); v <= 0 {
			t.Errorf("process_resident_memory_bytes = %v", v)
		}
	})

	t.Run("conventions", func(t *testing.T) {
		checkConventions(t, families)
		if strings.Contains(text, s.Token) {
			t.Error("the token appears in /metrics")
		}
	})
}

// TestMetricsCardinalityIsBounded sends 2,000 requests to random paths with
// random methods, made-up ones included: they must all land in a handful of
// series (route "unmatched", unknown methods as OTHER), and no random string
// may reach a label.
func TestMetricsCardinalityIsBounded(t *testing.T) {
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr})

	known := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}
	const n = 2000
	type sent struct{ method, path, marker string }
	reqs := make([]sent, n)
	madeUp := 0
	for i := range reqs {
		marker := randomHex(t, 8)
		method := known[rand.IntN(len(known))]
		if rand.IntN(3) == 0 {
			// A made-up method: a fixed one or a random token.
			method = []string{"FOO", "BREW", "PROPFIND", "M" + strings.ToUpper(marker)}[rand.IntN(4)]
			madeUp++
		}
		path := []string{"/x/" + marker, "/" + marker, "/plants/" + marker + "/x", "/openapi.yaml/" + marker, "/x/" + marker + "/y?q=" + marker}[rand.IntN(5)]
		reqs[i] = sent{method, path, marker}
	}

	var wg sync.WaitGroup
	work := make(chan sent)
	var mu sync.Mutex
	statuses := make(map[int]int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				req, err := http.NewRequest(r.method, s.API+r.path, strings.NewReader(`{"id": 1, "name": "x"}`))
				if err != nil {
					t.Error(err)
					continue
				}
				req.Header.Set("Authorization", "Bearer "+s.Token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("%s %s: %v", r.method, r.path, err)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	for _, r := range reqs {
		work <- r
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if statuses[404] != n {
		t.Fatalf("answers %v, want all %d to be 404", statuses, n)
	}

	families, text := s.Metrics(t)
	got := requestCounts(t, families)
	allowed := append(slices.Clone(known), "OTHER")
	var total, other uint64
	for k, c := range got {
		if k.route != "unmatched" || k.code != "404" || !slices.Contains(allowed, k.method) {
			t.Errorf("series %v (count %d): every random request belongs under a known method or OTHER, route unmatched, code 404", k, c)
		}
		total += c
		if k.method == "OTHER" {
			other += c
		}
	}
	if len(got) > len(allowed) {
		t.Errorf("%d series of %s, at most %d allowed:\n%s", len(got), httpDuration, len(allowed), formatCounts(got))
	}
	if total != n {
		t.Errorf("%d requests counted, want %d", total, n)
	}
	if other != uint64(madeUp) {
		t.Errorf("%d requests counted as OTHER, want the %d with made-up methods", other, madeUp)
	}

	// No random string reached any label value of any metric.
	labelValues := regexp.MustCompile(`="[^"]*"`).FindAllString(text, -1)
	joined := strings.Join(labelValues, "\n")
	for _, r := range reqs {
		if strings.Contains(joined, r.marker) || strings.Contains(joined, strings.ToUpper(r.marker)) {
			t.Fatalf("random path or method %s %s reached a label value in /metrics", r.method, r.path)
		}
	}
	for _, m := range []string{"FOO", "BREW", "PROPFIND"} {
		if strings.Contains(joined, `"`+m+`"`) {
			t.Errorf("made-up method %s is a label value", m)
		}
	}
}
