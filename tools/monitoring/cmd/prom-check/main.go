// Command prom-check asks a real Prometheus whether plantstore's dashboard
// and rules work on the data it scraped: the test cluster's Prometheus
// scenario (tools/k8s/cluster-test.d/35-prometheus.sh) runs it against the
// Prometheus the Prometheus Operator made from the chart's ServiceMonitor
// and PrometheusRule.
//
// It checks, printing one PASS or FAIL line each (details indented):
//   - the dashboard's variables have values (job, instance);
//   - every target of every panel, its Grafana variables filled in as
//     Grafana would (instance = All), returns data over the time range;
//   - every group and rule of the rules file is loaded, evaluates without
//     error, every recording rule's series has data and every alerting
//     rule's expression evaluates;
//
// and with -dump writes the series of the dashboard's main panels over the
// range as JSON, for dashboard-png to draw, with the exemplars (trace_id)
// of the targets that show them in Grafana.
//
//	prom-check -prometheus http://127.0.0.1:9090 -rules prometheus-rules.yaml \
//	  -dashboard grafana-dashboard.json -start 1700000000 [-end ...] [-dump panels.json]
//
// It exits 1 when a check failed.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/plantstore/plantstore/tools/monitoring"
)

func main() {
	var o options
	flag.StringVar(&o.prometheus, "prometheus", "", "base URL of the Prometheus API")
	flag.StringVar(&o.rules, "rules", "", "the rules file (charts/plantstore/files/prometheus-rules.yaml)")
	flag.StringVar(&o.dashboard, "dashboard", "", "the dashboard (charts/plantstore/files/grafana-dashboard.json)")
	start := flag.Int64("start", 0, "start of the dashboard's time range, Unix seconds")
	end := flag.Int64("end", 0, "end of the time range, Unix seconds (default now)")
	flag.DurationVar(&o.step, "step", 5*time.Second, "resolution of the range queries ($__interval)")
	flag.StringVar(&o.rateInterval, "rate-interval", "1m", "$__rate_interval (Grafana: 4 scrape intervals of the data source, 15 s by default)")
	flag.StringVar(&o.dump, "dump", "", "write the main panels' series to this JSON file")
	flag.Parse()
	if o.prometheus == "" || o.rules == "" || o.dashboard == "" || *start == 0 {
		fmt.Fprintln(os.Stderr, "prom-check: -prometheus, -rules, -dashboard and -start are required")
		os.Exit(2)
	}
	o.start = time.Unix(*start, 0)
	o.end = time.Now()
	if *end != 0 {
		o.end = time.Unix(*end, 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api, err := newAPI(o.prometheus, &http.Client{Timeout: 30 * time.Second})
	if err == nil {
		c := &checker{api: api, o: o}
		if err = c.run(ctx); err == nil && c.failed > 0 {
			os.Exit(1)
		}
	}
	if err != nil {
		fmt.Println("FAIL  prom-check:", err)
		os.Exit(1)
	}
}

// newAPI is a client of the Prometheus HTTP API at base.
func newAPI(base string, hc *http.Client) (v1.API, error) {
	c, err := promapi.NewClient(promapi.Config{Address: base, Client: hc})
	return v1.NewAPI(c), err
}

// withDetail adds the answer's body to an API error whose text lacks it:
// for a 5xx the client says only "server error: 503", and Prometheus's
// own reason ("exemplar storage disabled") is in Detail.
func withDetail(err error) error {
	var e *v1.Error
	if errors.As(err, &e) && e.Detail != "" && !strings.Contains(e.Msg, e.Detail) {
		return fmt.Errorf("%w: %.300s", err, strings.TrimSpace(e.Detail))
	}
	return err
}

type options struct {
	prometheus, rules, dashboard, dump string
	start, end                         time.Time
	step                               time.Duration
	rateInterval                       string
}

type checker struct {
	api    v1.API
	o      options
	failed int
}

func (c *checker) pass(format string, args ...any) { fmt.Printf("PASS  "+format+"\n", args...) }
func (c *checker) fail(format string, args ...any) {
	c.failed++
	fmt.Printf("FAIL  "+format+"\n", args...)
}
func detail(format string, args ...any) { fmt.Printf("      "+format+"\n", args...) }

func (c *checker) run(ctx context.Context) error {
	d, err := monitoring.LoadDashboard(c.o.dashboard)
	if err != nil {
		return err
	}
	rules, err := monitoring.LoadRules(c.o.rules)
	if err != nil {
		return err
	}
	values, err := c.variables(ctx)
	if err != nil {
		return err
	}
	c.panels(ctx, d, values)
	if err := c.rules(ctx, rules); err != nil {
		return err
	}
	if c.o.dump != "" {
		return c.dumpPanels(ctx, d, values)
	}
	return nil
}

// variables resolves the dashboard's job and instance variables as Grafana
// would from label_values(plantstore_build_info, ...), and returns the
// values of every variable the targets use.
func (c *checker) variables(ctx context.Context) (map[string]string, error) {
	jobs, _, _, err := c.api.LabelValues(ctx, "job", []string{"plantstore_build_info"}, time.Time{}, time.Time{})
	if err != nil {
		return nil, withDetail(err)
	}
	instances, _, _, err := c.api.LabelValues(ctx, "instance", []string{`plantstore_build_info{job=~"plantstore"}`}, time.Time{}, time.Time{})
	if err != nil {
		return nil, withDetail(err)
	}
	if slices.Contains(jobs, "plantstore") && len(instances) > 0 {
		c.pass("dashboard variables: job %v has plantstore; instance has %d value(s) %v", jobs, len(instances), instances)
	} else {
		c.fail("dashboard variables: job %v (want plantstore among them), instance %v (want at least one)", jobs, instances)
	}
	values := maps.Clone(monitoring.GrafanaValues)
	values["job"] = "plantstore"
	values["instance"] = allRegex(instances)
	values["__rate_interval"] = c.o.rateInterval
	values["__interval"] = c.o.step.String()
	values["__interval_ms"] = strconv.FormatInt(c.o.step.Milliseconds(), 10)
	rng := c.o.end.Sub(c.o.start).Round(time.Second)
	values["__range"] = strconv.Itoa(int(rng.Seconds())) + "s"
	values["__range_s"] = strconv.Itoa(int(rng.Seconds()))
	values["__range_ms"] = strconv.FormatInt(rng.Milliseconds(), 10)
	return values, nil
}

// allRegex is what Grafana puts for a multi-value variable set to All
// (without a custom all value): the values, regex-escaped, as alternatives.
// The backslashes are doubled because the value lands in a PromQL string.
func allRegex(values model.LabelValues) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strings.ReplaceAll(regexp.QuoteMeta(string(v)), `\`, `\\`)
	}
	return "(" + strings.Join(quoted, "|") + ")"
}

// panels runs every target of every panel over the time range.
func (c *checker) panels(ctx context.Context, d monitoring.Dashboard, values map[string]string) {
	exprs := d.Expressions()
	var empty []string
	for _, e := range exprs {
		text, err := monitoring.SubstituteGrafanaVariables(e.Text, values)
		if err != nil {
			empty = append(empty, fmt.Sprintf("%s: %v", e.Where, err))
			continue
		}
		m, err := c.queryRange(ctx, text)
		if err != nil {
			empty = append(empty, fmt.Sprintf("%s: %v", e.Where, err))
			continue
		}
		points := 0
		for _, s := range m {
			points += len(s.Values) + len(s.Histograms)
		}
		if points == 0 {
			empty = append(empty, fmt.Sprintf("%s: no data\n        %s", e.Where, text))
			continue
		}
		detail("%-75.75s %3d series %5d points", e.Where, len(m), points)
	}
	if len(empty) == 0 {
		c.pass("dashboard: all %d targets of %d panels return data over %s (variables filled in as Grafana does, instance = All)",
			len(exprs), len(d.AllPanels()), c.o.end.Sub(c.o.start).Round(time.Second))
	} else {
		c.fail("dashboard: %d of %d targets return no data", len(empty), len(exprs))
		for _, e := range empty {
			detail("%s", e)
		}
	}
}

// rules compares the loaded rules with the file, and evaluates them.
func (c *checker) rules(ctx context.Context, file monitoring.Rules) error {
	res, err := c.api.Rules(ctx, nil)
	if err != nil {
		return withDetail(err)
	}
	groups := res.Groups
	type ruleState struct{ Health, LastError, State string }
	loaded := map[string]ruleState{}
	for _, g := range groups {
		for _, r := range g.Rules {
			switch r := r.(type) {
			case v1.AlertingRule:
				loaded[r.Name] = ruleState{string(r.Health), r.LastError, r.State}
			case v1.RecordingRule:
				loaded[r.Name] = ruleState{string(r.Health), r.LastError, ""}
			}
		}
	}
	var missing, unhealthy []string
	for _, name := range slices.Concat(file.Recorded, file.Alerts) {
		r, ok := loaded[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case r.Health != "ok" || r.LastError != "":
			unhealthy = append(unhealthy, fmt.Sprintf("%s: health %q %s", name, r.Health, r.LastError))
		}
	}
	if len(missing) == 0 && len(unhealthy) == 0 {
		c.pass("rules: the %d recording and %d alerting rules of the file are loaded (%d groups) and evaluate with health ok",
			len(file.Recorded), len(file.Alerts), len(groups))
	} else {
		c.fail("rules: %d missing %v, %d unhealthy", len(missing), missing, len(unhealthy))
		for _, u := range unhealthy {
			detail("%s", u)
		}
	}

	var noData []string
	for _, name := range file.Recorded {
		m, err := c.queryRange(ctx, name)
		if err != nil {
			return err
		}
		n := 0
		for _, s := range m {
			n += len(s.Values)
		}
		if n == 0 {
			noData = append(noData, name)
		} else {
			detail("%-60s %d points, last %s", name, n, last(m))
		}
	}
	if len(noData) == 0 {
		c.pass("recording rules: all %d recorded series have data", len(file.Recorded))
	} else {
		c.fail("recording rules without data: %v", noData)
	}

	var bad []string
	states := map[string]string{}
	for _, e := range file.Expressions {
		if !strings.Contains(e.Where, "(alert ") {
			continue
		}
		if _, _, _, err := c.api.Query(ctx, e.Text, c.o.end); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", e.Where, withDetail(err)))
		}
	}
	for _, name := range file.Alerts {
		states[name] = loaded[name].State
	}
	if len(bad) == 0 {
		c.pass("alerting rules: all %d expressions evaluate on the real data (states now: %v)", len(file.Alerts), states)
	} else {
		c.fail("alerting rules whose expression does not evaluate: %d", len(bad))
		for _, b := range bad {
			detail("%s", b)
		}
	}
	return nil
}

func last(m model.Matrix) string {
	for _, s := range m {
		if len(s.Values) > 0 {
			return s.Values[len(s.Values)-1].Value.String()
		}
	}
	return "none"
}

// queryRange runs q over the checked range.
func (c *checker) queryRange(ctx context.Context, q string) (model.Matrix, error) {
	v, _, _, err := c.api.QueryRange(ctx, q, v1.Range{Start: c.o.start, End: c.o.end, Step: c.o.step})
	if err != nil {
		return nil, withDetail(err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("%s: a %s, not a matrix", q, v.Type())
	}
	return m, nil
}

// mainPanels are the panels drawn into docs/dashboard-on-cluster.png: the
// first panel whose title starts with prefix, and of it the targets to draw
// (by refId; empty: all).
var mainPanels = []struct {
	prefix  string
	targets []string
}{
	{"Availability", nil},
	{"Plant requests within 100 ms", nil},
	{"Request rate by", nil},
	{"Request latency p50 / p90 / p99", []string{"C"}},
	{"5xx ratio by code", nil},
	{"Store operations by outcome", nil},
	{"Store operation latency p99", nil},
}

// Dump is what -dump writes: the main panels' series over the range.
type Dump struct {
	Start, End time.Time
	Panels     []DumpPanel
}

// DumpPanel is one panel: a time series, or a stat (one value).
type DumpPanel struct {
	Title     string
	Type      string
	Unit      string
	Stat      *float64       `json:",omitempty"`
	Series    []DumpSeries   `json:",omitempty"`
	Exemplars []DumpExemplar `json:",omitempty"`
}

// DumpSeries is one line of a panel, named by the target's legend.
type DumpSeries struct {
	Legend string
	Points [][2]float64 // Unix seconds, value
}

// DumpExemplar is one exemplar of a panel's targets: the dot Grafana draws
// on the panel, which links to the trace in Jaeger.
type DumpExemplar struct {
	Time    float64 // Unix seconds
	Value   float64
	TraceID string
}

var legendLabel = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

func (c *checker) dumpPanels(ctx context.Context, d monitoring.Dashboard, values map[string]string) error {
	out := Dump{Start: c.o.start, End: c.o.end}
	all := d.AllPanels()
	for _, want := range mainPanels {
		var p monitoring.Panel
		for _, q := range all {
			if q.Type != "row" && strings.HasPrefix(q.Title, want.prefix) {
				p = q
				break
			}
		}
		if p.Title == "" {
			return fmt.Errorf("dump: the dashboard has no panel whose title starts with %q", want.prefix)
		}
		dp := DumpPanel{Title: p.Title, Type: p.Type, Unit: p.FieldConfig.Defaults.Unit}
		for _, t := range p.Targets {
			if len(want.targets) > 0 && !slices.Contains(want.targets, t.RefID) {
				continue
			}
			text, err := monitoring.SubstituteGrafanaVariables(t.Expr, values)
			if err != nil {
				return err
			}
			if p.Type == "stat" {
				v, _, _, err := c.api.Query(ctx, text, c.o.end)
				if err != nil {
					return withDetail(err)
				}
				var f float64
				switch v := v.(type) {
				case model.Vector:
					f = math.NaN()
					if len(v) > 0 {
						f = float64(v[0].Value)
					}
				case *model.Scalar:
					f = float64(v.Value)
				}
				if !math.IsNaN(f) && !math.IsInf(f, 0) {
					dp.Stat = &f
				}
				continue
			}
			m, err := c.queryRange(ctx, text)
			if err != nil {
				return err
			}
			for _, s := range m {
				ds := DumpSeries{Legend: legendLabel.ReplaceAllStringFunc(t.LegendFormat, func(l string) string {
					return string(s.Metric[model.LabelName(legendLabel.FindStringSubmatch(l)[1])])
				})}
				for _, v := range s.Values {
					f := float64(v.Value)
					if math.IsNaN(f) || math.IsInf(f, 0) { // no JSON for them; Grafana leaves a gap too
						continue
					}
					ds.Points = append(ds.Points, [2]float64{unixSeconds(v.Timestamp), f})
				}
				dp.Series = append(dp.Series, ds)
			}
			if t.Exemplar {
				es, err := c.api.QueryExemplars(ctx, text, c.o.start, c.o.end)
				if err != nil {
					return fmt.Errorf("dump: exemplars of %q target %s: %w", p.Title, t.RefID, withDetail(err))
				}
				dp.Exemplars = append(dp.Exemplars, c.dumpExemplars(es)...)
			}
		}
		slices.SortFunc(dp.Series, func(a, b DumpSeries) int { return strings.Compare(a.Legend, b.Legend) })
		dp.Exemplars = uniqueExemplars(dp.Exemplars)
		out.Panels = append(out.Panels, dp)
	}
	f, err := os.Create(c.o.dump)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// dumpExemplars keeps the exemplars in the range that name a trace: only
// those lead from the panel to Jaeger.
func (c *checker) dumpExemplars(es []v1.ExemplarQueryResult) []DumpExemplar {
	start, end := float64(c.o.start.UnixMilli())/1000, float64(c.o.end.UnixMilli())/1000
	var out []DumpExemplar
	for _, s := range es {
		for _, e := range s.Exemplars {
			id, at, f := string(e.Labels["trace_id"]), unixSeconds(e.Timestamp), float64(e.Value)
			if id == "" || at < start || at > end {
				continue
			}
			if math.IsNaN(f) || math.IsInf(f, 0) { // no JSON for them
				continue
			}
			out = append(out, DumpExemplar{Time: at, Value: f, TraceID: id})
		}
	}
	return out
}

// uniqueExemplars sorts the exemplars by time and keeps the first of each
// trace: one trace shows up once per series and per target that saw it.
func uniqueExemplars(es []DumpExemplar) []DumpExemplar {
	slices.SortStableFunc(es, func(a, b DumpExemplar) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), strings.Compare(a.TraceID, b.TraceID))
	})
	seen := map[string]bool{}
	out := es[:0]
	for _, e := range es {
		if !seen[e.TraceID] {
			seen[e.TraceID] = true
			out = append(out, e)
		}
	}
	return out
}

// unixSeconds is t in Unix seconds, as the dump writes times.
func unixSeconds(t model.Time) float64 { return float64(t) / 1000 }
