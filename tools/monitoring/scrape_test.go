package monitoring

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
)

// TestMetricsExistInRealScrape builds plantstore from this repository, runs it
// on a real redis-server with a webhook subscriber on loopback, sends it
// traffic that reaches every outcome the rules and the dashboard look at
// (webhook deliveries, retried and delivered, included), scrapes its
// /metrics and checks that every
// metric they read is exposed, with the labels they use and the histogram
// buckets the latency SLO needs.
func TestMetricsExistInRealScrape(t *testing.T) {
	t.Parallel()
	// The Redis exporter's metrics are checked on a scrape of the exporter
	// (TestRedisExporterMetricsExistInRealScrape).
	refs, labelRefs := referencedMetrics(t, func(name string) bool { return !FromRedisExporter(name) })
	if t.Failed() {
		t.FailNow()
	}

	redis := redistest.Start(t)
	token := "monitoring-test-token-Zx7Qp2Lm9Vb4"
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A webhook subscriber on loopback (allowed by --webhook-allow-cidrs),
	// so that the create and the delete below are delivered and the
	// delivery series exist.
	hook := startHookReceiver(t)
	subscribers := filepath.Join(t.TempDir(), "subscribers")
	if err := os.WriteFile(subscribers, []byte(hook.url+hookPath+" "+hookSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := service{servicetest.Start(t, servicetest.Binary(t), servicetest.Options{RedisAddr: redis.Addr, NoTokens: true,
		Extra: []string{"--auth-tokens-file", tokens,
			"--webhook-subscribers-file", subscribers, "--webhook-allow-cidrs", "127.0.0.0/8",
			"--webhook-poll-interval", "20ms", "--webhook-backoff-base", "50ms", "--webhook-backoff-max", "200ms",
			"--webhook-stats-interval", "100ms"}})}

	const plant = `{"id": 1, "name": "Monstera", "tag": "tropical"}`
	for _, c := range []struct {
		what, method, path, auth, body string
		want                           int
	}{
		{"create", http.MethodPost, "/plants", "Bearer " + token, plant, 200},
		{"the same create again", http.MethodPost, "/plants", "Bearer " + token, plant, 200},
		{"a different plant with the same id", http.MethodPost, "/plants", "Bearer " + token, `{"id": 1, "name": "Ficus"}`, 409},
		{"malformed JSON", http.MethodPost, "/plants", "Bearer " + token, `{"id": `, 400},
		{"no Authorization header", http.MethodPost, "/plants", "", plant, 401},
		{"a wrong token", http.MethodPost, "/plants", "Bearer not-the-token", plant, 401},
		{"a malformed Authorization header", http.MethodPost, "/plants", "Basic Zm9vOmJhcg==", plant, 401},
		{"read", http.MethodGet, "/plants/1", "Bearer " + token, "", 200},
		{"list", http.MethodGet, "/plants", "Bearer " + token, "", 200},
		{"delete", http.MethodDelete, "/plants/1", "Bearer " + token, "", 204},
		{"read a deleted plant", http.MethodGet, "/plants/1", "Bearer " + token, "", 404},
		{"an unknown path", http.MethodGet, "/nowhere", "", "", 404},
		{"a wrong method", http.MethodPut, "/plants", "", "", 405},
		{"the OpenAPI document", http.MethodGet, "/openapi.yaml", "", "", 200},
	} {
		svc.expect(t, c.what, c.method, c.path, c.auth, c.body, c.want)
	}
	// The receiver refuses each event's first attempt, so both a retry and
	// a delivery of the created and the deleted plant are counted.
	svc.waitDelivered(t, hook, 2)
	// The store's memory gauges are read from Redis at each scrape: taken
	// while it runs, the rest once it is stopped.
	up := svc.scrape(t)
	redis.Stop()
	svc.expect(t, "create with Redis stopped", http.MethodPost, "/plants", "Bearer "+token,
		`{"id": 2, "name": "Aloe"}`, 503)

	families := up
	maps.Copy(families, svc.scrape(t)) // the later scrape's families win

	checkReferenced(t, refs, labelRefs, families)

	// The label values the SLOs and the cause alerts select on exist, and the
	// latency SLO's bucket is there.
	if f := families["plantstore_http_request_duration_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("plantstore_http_request_duration_seconds is not a histogram in the scrape: %v", f)
	} else {
		for _, want := range []map[string]string{
			{"method": "POST", "route": "/plants", "code": "200"},
			{"method": "POST", "route": "/plants", "code": "409"},
			{"method": "POST", "route": "/plants", "code": "503"},
			// The latency SLO covers the resource routes too, by template.
			{"method": "GET", "route": "/plants", "code": "200"},
			{"method": "GET", "route": "/plants/{id}", "code": "200"},
			{"method": "GET", "route": "/plants/{id}", "code": "404"},
			{"method": "DELETE", "route": "/plants/{id}", "code": "204"},
			{"route": "unmatched", "code": "404"},
		} {
			if len(series(f, want)) == 0 {
				t.Errorf("plantstore_http_request_duration_seconds has no series %v after the traffic", want)
			}
		}
		for _, m := range f.GetMetric() {
			bounds := map[float64]bool{}
			for _, b := range m.GetHistogram().GetBucket() {
				bounds[b.GetUpperBound()] = true
			}
			for _, le := range []float64{0.1, 0.25} {
				if !bounds[le] {
					t.Errorf("plantstore_http_request_duration_seconds%s has no le=\"%g\" bucket", labelString(m), le)
				}
			}
		}
	}
	if f := families["plantstore_store_operation_duration_seconds"]; f == nil {
		t.Error("no plantstore_store_operation_duration_seconds in the scrape")
	} else if len(series(f, map[string]string{"operation": "create", "outcome": "unavailable"})) == 0 {
		t.Error("plantstore_store_operation_duration_seconds has no operation=\"create\", outcome=\"unavailable\" series after the 503")
	}

	// The webhook series: a retry then a delivery of each event, their
	// attempts timed, all under the subscriber's host:port (never its path
	// or secret).
	sub := strings.TrimPrefix(hook.url, "http://")
	for _, want := range []struct {
		outcome string
		n       float64
	}{{"retry", 2}, {"delivered", 2}} {
		if got := counterSum(families["plantstore_webhook_deliveries_total"], map[string]string{"subscriber": sub, "outcome": want.outcome}); got != want.n {
			t.Errorf("plantstore_webhook_deliveries_total{subscriber=%q, outcome=%q} = %v, want %v", sub, want.outcome, got, want.n)
		}
	}
	if f := families["plantstore_webhook_delivery_duration_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("plantstore_webhook_delivery_duration_seconds is not a histogram in the scrape: %v", f)
	} else if ms := series(f, map[string]string{"subscriber": sub}); len(ms) != 1 || ms[0].GetHistogram().GetSampleCount() != 4 {
		t.Errorf("plantstore_webhook_delivery_duration_seconds{subscriber=%q}: %v, want one series of 4 attempts", sub, ms)
	}
	// Routes are labelled by template: no raw path of the traffic above, nor
	// the subscriber's path or secret, is in a label value of any series.
	for _, name := range sortedKeys(families) {
		for _, m := range families[name].GetMetric() {
			for _, l := range m.GetLabel() {
				if v := l.GetValue(); v == "/plants/1" || v == "/nowhere" {
					t.Errorf("%s%s carries the raw path %q as a label value", name, labelString(m), v)
				} else if strings.Contains(v, hookPath) || strings.Contains(v, hookSecret) {
					t.Errorf("%s%s carries the subscriber's path or secret", name, labelString(m))
				}
			}
		}
	}

	if t.Failed() {
		t.Logf("the scrape held these metric families: %s", strings.Join(sortedKeys(families), ", "))
	}
}

// checkReferenced reports each metric of refs that is not in the scrape, and
// each label of labelRefs that the metric it is used on does not carry.
func checkReferenced(t *testing.T, refs map[string][]string, labelRefs map[string]map[string][]string, families map[string]*dto.MetricFamily) {
	t.Helper()
	// Every metric the rules and the dashboard read.
	var missing []string
	for _, name := range sortedKeys(refs) {
		if _, ok := resolve(name, families); !ok {
			missing = append(missing, fmt.Sprintf("%s (read by %s)", name, strings.Join(refs[name], "; ")))
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d metric(s) the rules or the dashboard read are not in the scrape:\n  %s",
			len(missing), strings.Join(missing, "\n  "))
	}

	// Every label they match or group on, on the metric they read.
	for _, name := range sortedKeys(labelRefs) {
		f, ok := resolve(name, families)
		if !ok {
			continue // reported above
		}
		have := familyLabels(f)
		for _, l := range sortedKeys(labelRefs[name]) {
			if !have[l] {
				t.Errorf("metric %s has no label %q (its labels: %s), used by %s",
					name, l, strings.Join(sortedKeys(have), ", "), strings.Join(labelRefs[name][l], "; "))
			}
		}
	}
}

// The subscriber of the scrape's service: a path and a secret that must
// never reach a label.
const (
	hookPath   = "/hooks/monitoring-path-Q4v8"
	hookSecret = "whsec_bW9uaXRvcmluZy13ZWJob29rLXNlY3JldC0zMmJ5dGVz"
)

// hookReceiver is a webhook subscriber on loopback that refuses the first
// attempt of each webhook-id (503) and accepts the next ones (204).
type hookReceiver struct {
	url string

	mu       sync.Mutex
	attempts map[string]int // by webhook-id
}

func startHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{attempts: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id := r.Header.Get("webhook-id")
		if r.URL.Path != hookPath || id == "" || r.Header.Get("webhook-signature") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.attempts[id]++
		first := h.attempts[id] == 1
		h.mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// waitDelivered waits until the service counts n webhook deliveries (2xx)
// in its scrape, each of n events received twice.
func (s service) waitDelivered(t *testing.T, h *hookReceiver, n int) {
	t.Helper()
	var events, done int
	if !servicetest.Eventually(15*time.Second, 50*time.Millisecond, func() bool {
		h.mu.Lock()
		events, done = len(h.attempts), 0
		for _, a := range h.attempts {
			if a >= 2 {
				done++
			}
		}
		h.mu.Unlock()
		return done == n && events == n &&
			counterSum(s.scrape(t)["plantstore_webhook_deliveries_total"], map[string]string{"outcome": "delivered"}) == float64(n)
	}) {
		t.Fatalf("%d of %d webhook events delivered (%d received) within 15s:\n%s", done, n, events, s.Logs)
	}
}

// counterSum adds up the counters of f whose labels include want.
func counterSum(f *dto.MetricFamily, want map[string]string) float64 {
	var sum float64
	for _, m := range series(f, want) {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// referencedMetrics returns every metric the rules and the dashboard read
// that keep accepts, with where, and the labels each is matched or grouped
// on. The recording rules' own outputs, up and ALERTS come from Prometheus,
// not the service.
func referencedMetrics(t *testing.T, keep func(name string) bool) (map[string][]string, map[string]map[string][]string) {
	rules, ruleExprs := parseRules(t)
	dashExprs := append(parseDashboard(t, GrafanaValues), parseVariables(t)...)
	ignored := map[string]bool{"up": true, "ALERTS": true, "ALERTS_FOR_STATE": true}
	for _, r := range rules.Recorded {
		ignored[r] = true
	}
	for _, e := range append(ruleExprs, dashExprs...) {
		for _, name := range MetricNames(e.Expr) {
			if !keep(name) {
				ignored[name] = true
			}
		}
	}
	// Labels Prometheus adds or the exposition format carries itself.
	ignoredLabels := map[string]bool{labels.MetricName: true, "job": true, "instance": true, "le": true, "quantile": true}

	refs := map[string][]string{}
	labelRefs := map[string]map[string][]string{}
	for _, e := range append(ruleExprs, dashExprs...) {
		for _, name := range MetricNames(e.Expr) {
			if !ignored[name] && !slices.Contains(refs[name], e.Where) {
				refs[name] = append(refs[name], e.Where)
			}
		}
		for name, ls := range LabelUses(e.Expr) {
			if ignored[name] {
				continue
			}
			for l := range ls {
				if ignoredLabels[l] {
					continue
				}
				if labelRefs[name] == nil {
					labelRefs[name] = map[string][]string{}
				}
				if !slices.Contains(labelRefs[name][l], e.Where) {
					labelRefs[name][l] = append(labelRefs[name][l], e.Where)
				}
			}
		}
	}
	if len(refs) == 0 {
		t.Error("the rules and the dashboard read no metric")
	}
	t.Logf("the rules and the dashboard read %d metrics: %s", len(refs), strings.Join(sortedKeys(refs), ", "))
	return refs, labelRefs
}

// resolve finds the family a series name belongs to: the family of that
// name, or for name_bucket the histogram and for name_sum and name_count the
// histogram or summary called name.
func resolve(name string, families map[string]*dto.MetricFamily) (*dto.MetricFamily, bool) {
	if f, ok := families[name]; ok {
		return f, true
	}
	for suffix, types := range map[string][]dto.MetricType{
		"_bucket": {dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM},
		"_sum":    {dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM, dto.MetricType_SUMMARY},
		"_count":  {dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM, dto.MetricType_SUMMARY},
	} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if f, ok := families[base]; ok && slices.Contains(types, f.GetType()) {
			return f, true
		}
	}
	return nil, false
}

func familyLabels(f *dto.MetricFamily) map[string]bool {
	have := map[string]bool{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			have[l.GetName()] = true
		}
	}
	return have
}

// series returns the metrics of f whose labels include want.
func series(f *dto.MetricFamily, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			out = append(out, m)
		}
	}
	return out
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// service is the running plantstore with this test's requests.
type service struct{ *servicetest.Service }

// expect sends one API request and reports a status other than want; it
// does not stop the test, so that the scrape still shows what was counted.
func (s service) expect(t *testing.T, what, method, path, auth, body string, want int) {
	t.Helper()
	if r := s.Do(t, method, path, body, map[string]string{"Authorization": auth}); r.Status != want {
		t.Errorf("%s: %s %s answered %d, want %d: %s", what, method, path, r.Status, want, r.Body)
	}
}

// scrape reads the admin /metrics in the Prometheus text format.
func (s service) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	families, _ := s.Metrics(t)
	return families
}
