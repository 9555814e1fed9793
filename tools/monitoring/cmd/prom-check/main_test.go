package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/plantstore/plantstore/tools/monitoring"
)

func TestAllRegex(t *testing.T) {
	tests := []struct {
		values model.LabelValues
		want   string
		match  []string
		not    []string
	}{
		{model.LabelValues{"10.88.0.5:9090"}, `(10\\.88\\.0\\.5:9090)`, []string{"10.88.0.5:9090"}, []string{"10x88x0x5:9090"}},
		{model.LabelValues{"a:1", "b:2"}, `(a:1|b:2)`, []string{"a:1", "b:2"}, []string{"c:3"}},
	}
	for _, tt := range tests {
		got := allRegex(tt.values)
		if got != tt.want {
			t.Errorf("allRegex(%q) = %s, want %s", tt.values, got, tt.want)
		}
		// What PromQL makes of the string literal: the doubled backslashes undone.
		re := regexp.MustCompile("^(?:" + strings.ReplaceAll(got, `\\`, `\`) + ")$")
		for _, m := range tt.match {
			if !re.MatchString(m) {
				t.Errorf("%s does not match %s", got, m)
			}
		}
		for _, m := range tt.not {
			if re.MatchString(m) {
				t.Errorf("%s matches %s", got, m)
			}
		}
	}
}

// fakePrometheus answers the API calls the checker and the dump make;
// emptyQuery names the queries (substrings) that return no data.
func fakePrometheus(t *testing.T, emptyQuery string, recorded []string, health string) *httptest.Server {
	// exemplars answers every exemplar query, for the range 1700000000 to
	// 1700000600: t1 twice (in two buckets' series), t2, one after the range
	// and one without a trace.
	exemplars := []any{
		map[string]any{
			"seriesLabels": map[string]string{"__name__": "plantstore_http_request_duration_seconds_bucket", "le": "0.025"},
			"exemplars": []any{
				map[string]any{"labels": map[string]string{"trace_id": "t2"}, "value": "0.25", "timestamp": 1700000300.5},
				map[string]any{"labels": map[string]string{"trace_id": "t1"}, "value": "0.0123", "timestamp": 1700000100.25},
				map[string]any{"labels": map[string]string{"trace_id": "late"}, "value": "0.5", "timestamp": 1700000900.0},
				map[string]any{"labels": map[string]string{"span_id": "s1"}, "value": "0.1", "timestamp": 1700000200.0},
			},
		},
		map[string]any{
			"seriesLabels": map[string]string{"__name__": "plantstore_http_request_duration_seconds_bucket", "le": "0.05"},
			"exemplars": []any{
				map[string]any{"labels": map[string]string{"trace_id": "t1"}, "value": "0.0123", "timestamp": 1700000100.25},
			},
		},
	}
	reply := func(w http.ResponseWriter, data any) {
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/label/job/values"):
			reply(w, []string{"plantstore"})
		case strings.HasSuffix(r.URL.Path, "/label/instance/values"):
			reply(w, []string{"10.88.0.5:9090"})
		case r.URL.Path == "/api/v1/query_range":
			q := r.FormValue("query") // the client POSTs a form
			// The Redis row's queries match no instance (the variable lists
			// the service's instances), only group by it.
			if !strings.Contains(q, `instance=~"(10\\.88\\.0\\.5:9090)"`) && strings.Contains(q, "instance=~") || strings.Contains(q, "$") {
				t.Errorf("a variable not filled in as Grafana does: %s", q)
			}
			if emptyQuery != "" && strings.Contains(q, emptyQuery) {
				reply(w, map[string]any{"resultType": "matrix", "result": []any{}})
				return
			}
			reply(w, map[string]any{"resultType": "matrix", "result": []any{
				map[string]any{"metric": map[string]string{"route": "/plants"}, "values": [][2]any{{1700000000.0, "1"}, {1700000005.0, "2"}}},
			}})
		case r.URL.Path == "/api/v1/query":
			reply(w, map[string]any{"resultType": "vector", "result": []any{}})
		case r.URL.Path == "/api/v1/query_exemplars":
			_ = r.ParseForm()
			q := r.Form
			if strings.Contains(q.Get("query"), "$") || !strings.Contains(q.Get("query"), `instance=~"(10\\.88\\.0\\.5:9090)"`) ||
				q.Get("start") == "" || q.Get("end") == "" {
				t.Errorf("exemplar query without the variables filled in or the range: %s", r.URL.RawQuery)
			}
			reply(w, exemplars)
		case r.URL.Path == "/api/v1/rules":
			var rules []map[string]string
			for _, n := range recorded {
				kind := "recording"
				if !strings.Contains(n, ":") { // alerts are named in CamelCase, recorded series level:metric:operations
					kind = "alerting"
				}
				rules = append(rules, map[string]string{"name": n, "type": kind, "health": health, "state": "inactive"})
			}
			reply(w, map[string]any{"groups": []any{map[string]any{"name": "g", "rules": rules}}})
		default:
			http.NotFound(w, r)
		}
	}))
}

// chartFile is a file of the chart's files/ directory.
func chartFile(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "charts", "plantstore", "files", name)
}

// allRules names every rule of the chart's rules file.
func allRules(t *testing.T) []string {
	rules, err := monitoring.LoadRules(chartFile("prometheus-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return slices.Concat(rules.Recorded, rules.Alerts)
}

// newChecker checks the chart's files against srv over 1700000000 to
// 1700000600, dumping the panels to dump unless it is "".
func newChecker(t *testing.T, srv *httptest.Server, dump string) *checker {
	api, err := newAPI(srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return &checker{api: api, o: options{
		rules: chartFile("prometheus-rules.yaml"), dashboard: chartFile("grafana-dashboard.json"),
		start: time.Unix(1700000000, 0), end: time.Unix(1700000600, 0), step: 5 * time.Second, rateInterval: "1m", dump: dump,
	}}
}

func TestChecker(t *testing.T) {
	all := allRules(t)
	tests := []struct {
		name       string
		emptyQuery string
		loaded     []string
		health     string
		wantFailed int
	}{
		{"everything has data", "", all, "ok", 0},
		{"one metric without data", "plantstore_redis_pool_timeouts_total", all, "ok", 1},
		{"a rule not loaded", "", all[1:], "ok", 1},
		{"rules failing to evaluate", "", all, "err", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakePrometheus(t, tt.emptyQuery, tt.loaded, tt.health)
			defer srv.Close()
			c := newChecker(t, srv, "")
			if err := c.run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if c.failed != tt.wantFailed {
				t.Errorf("%d checks failed, want %d", c.failed, tt.wantFailed)
			}
		})
	}
}

// TestDump: -dump writes every main panel, with the legends filled in from
// the series' labels, and the exemplars of the targets with exemplar: true
// (the latency panel): in the range, with a trace, once each, by time.
func TestDump(t *testing.T) {
	srv := fakePrometheus(t, "", allRules(t), "ok")
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "panels.json")
	c := newChecker(t, srv, out)
	if err := c.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var d Dump
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Panels) != len(mainPanels) {
		t.Fatalf("%d panels, want %d", len(d.Panels), len(mainPanels))
	}
	for i, p := range d.Panels {
		if !strings.HasPrefix(p.Title, mainPanels[i].prefix) {
			t.Errorf("panel %d is %q, want one starting %q", i, p.Title, mainPanels[i].prefix)
		}
		if p.Type == "timeseries" && (len(p.Series) == 0 || strings.Contains(p.Series[0].Legend, "{{")) {
			t.Errorf("panel %q: series %+v, want legends filled in", p.Title, p.Series)
		}
		var want []DumpExemplar
		if mainPanels[i].prefix == "Request latency p50 / p90 / p99" {
			want = []DumpExemplar{{Time: 1700000100.25, Value: 0.0123, TraceID: "t1"}, {Time: 1700000300.5, Value: 0.25, TraceID: "t2"}}
		}
		if !slices.Equal(p.Exemplars, want) {
			t.Errorf("panel %q: exemplars %+v, want %+v", p.Title, p.Exemplars, want)
		}
	}
}

// TestDumpExemplarError: a failing exemplar query fails the dump, as the
// other queries do.
func TestDumpExemplarError(t *testing.T) {
	fake := fakePrometheus(t, "", allRules(t), "ok")
	defer fake.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/query_exemplars" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "unavailable", "error": "exemplar storage disabled"})
			return
		}
		fake.Config.Handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	err := newChecker(t, srv, filepath.Join(t.TempDir(), "panels.json")).run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exemplar storage disabled") {
		t.Fatalf("run: %v, want the exemplar query's error", err)
	}
}
