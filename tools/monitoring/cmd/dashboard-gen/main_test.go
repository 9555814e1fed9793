//lint:file-ignore SA1019 the chart ships v1 dashboard JSON (dashboard.go)

package main

import (
	"bytes"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/plantstore/plantstore/internal/docgen"
	"github.com/plantstore/plantstore/tools/monitoring"
)

// The chart's file is what the code generates (make lint checks the same).
func TestCommittedDashboardIsGenerated(t *testing.T) {
	var out bytes.Buffer
	if err := checkFile(&out, filepath.Join(docgen.Root(t), "charts", "plantstore", "files", "grafana-dashboard.json")); err != nil {
		t.Log(out.String())
		t.Fatal(err)
	}
}

func TestCheckFileRefusesAnEditedFile(t *testing.T) {
	want, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, content string }{
		{"a title edited by hand", strings.Replace(string(want), `"title": "Goroutines"`, `"title": "Go routines"`, 1)},
		{"no final newline", strings.TrimSuffix(string(want), "\n")},
		{"empty", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.content == string(want) {
				t.Fatal("the mutation changed nothing")
			}
			path := filepath.Join(t.TempDir(), "grafana-dashboard.json")
			if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := checkFile(&out, path); !errors.Is(err, errStale) {
				t.Errorf("checkFile = %v, want %v", err, errStale)
			}
			if !strings.HasPrefix(out.String(), "--- "+path) {
				t.Errorf("no diff from the file:\n%s", out.String())
			}
		})
	}
}

func TestDiff(t *testing.T) {
	if d := Diff("f", []byte("a\nb\n"), []byte("a\nb\n")); d != "" {
		t.Errorf("equal files: diff %q", d)
	}
	d := Diff("f", []byte("a\nold\nc\n"), []byte("a\nnew\nc\n"))
	for _, want := range []string{"--- f", "+++ generated", "-old", "+new"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if d := Diff("f", []byte("a"), []byte("a\n")); d == "" {
		t.Error("a missing final newline: no diff")
	}
}

// Rendering twice gives the same bytes, and they read back into the SDK's
// dashboard type under its strict rules (no unknown or mistyped field).
func TestRenderIsStableAndStrictlyTheSchema(t *testing.T) {
	first, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	second, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatal("two renderings differ")
	}
	if !bytes.HasSuffix(first, []byte("}\n")) {
		t.Error("the file does not end in a newline")
	}
	plugins.RegisterDefaultPlugins() // the panel and query types the strict reading knows
	if err := readStrictly(first); err != nil {
		t.Fatalf("the generated dashboard does not read back strictly: %v", err)
	}
	// The strict reading is a check that can fail, down to a query and a
	// panel's options.
	for _, m := range []struct{ what, from, to string }{
		{"an unknown dashboard field", `"uid": "plantstore",`, `"uid": "plantstore", "uidd": "x",`},
		{"an unknown query field", `"refId": "A"`, `"refId": "A", "exprr": "up"`},
		{"an unknown stat option", `"graphMode": "area"`, `"graphMode": "area", "graphMod": "none"`},
		{"a mistyped field", `"drawStyle": "line"`, `"drawStyle": 7`},
	} {
		bad := bytes.Replace(first, []byte(m.from), []byte(m.to), 1)
		if bytes.Equal(bad, first) {
			t.Fatalf("%s: the mutation changed nothing", m.what)
		}
		if err := readStrictly(bad); err == nil {
			t.Errorf("%s read back strictly", m.what)
		}
	}
}

// readStrictly is Dashboard.UnmarshalJSONStrict, whose success in SDK
// v0.0.22 is an empty cog.BuildErrors rather than a nil error.
func readStrictly(data []byte) error {
	err := new(dashboard.Dashboard).UnmarshalJSONStrict(data)
	var errs cog.BuildErrors
	if errors.As(err, &errs) && len(errs) == 0 {
		return nil
	}
	return err
}

// target is one Prometheus query with the panel it belongs to.
type target struct {
	panel *dashboard.Panel
	query prometheus.Dataquery
}

func targets(t *testing.T, d dashboard.Dashboard) []target {
	t.Helper()
	var out []target
	for _, p := range d.Panels {
		if p.Panel == nil {
			continue
		}
		for _, q := range p.Panel.Targets {
			pq, ok := q.(prometheus.Dataquery)
			if !ok {
				t.Fatalf("panel %q: a target of type %T", *p.Panel.Title, q)
			}
			out = append(out, target{p.Panel, pq})
		}
	}
	return out
}

// tracedHistogram is the one histogram whose observations carry a trace_id
// exemplar (internal/httpapi/instrument.go).
const tracedHistogram = "plantstore_http_request_duration_seconds_bucket"

// Exemplars are asked for exactly where they exist: by every quantile of the
// traced histogram and by no other query (elsewhere Grafana would ask
// Prometheus for exemplars there are none of, or draw trace dots on a ratio).
func TestExemplarsOnTheTracedQuantiles(t *testing.T) {
	d, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	var with int
	for _, tg := range targets(t, d) {
		text, err := monitoring.SubstituteGrafanaVariables(tg.query.Expr, monitoring.GrafanaValues)
		if err != nil {
			t.Fatal(err)
		}
		expr, err := parser.ParseExpr(text)
		if err != nil {
			t.Fatalf("%s: %v", tg.query.Expr, err)
		}
		traced := false
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			if call, ok := n.(*parser.Call); ok && call.Func.Name == "histogram_quantile" {
				for _, name := range monitoring.MetricNames(call) {
					traced = traced || name == tracedHistogram
				}
			}
			return nil
		})
		asks := tg.query.Exemplar != nil && *tg.query.Exemplar
		if asks {
			with++
		}
		if asks != traced {
			t.Errorf("panel %q target %s: exemplar %v, want %v: only the quantiles of %s have exemplars",
				*tg.panel.Title, *tg.query.RefId, asks, traced, tracedHistogram)
		}
	}
	if with == 0 {
		t.Error("no query asks for exemplars")
	}
}

// dataLinkVariable matches ${name} and ${name:format} in a link's URL.
var dataLinkVariable = regexp.MustCompile(`\$\{([^}:]+)(?::([a-z]+))?\}`)

// The Jaeger links reach the Jaeger UI's search for the traced service over
// the dashboard's range: every variable they use exists, the address is
// inserted raw and the label values percent-encoded, and with values filled
// in as Grafana would, the URL is the search Jaeger's UI reads.
func TestJaegerLinks(t *testing.T) {
	d, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	var urls []string
	for _, l := range d.Links {
		if strings.Contains(l.Title, "Jaeger") {
			urls = append(urls, *l.Url)
		}
	}
	var latency []string
	for _, p := range d.Panels {
		if p.Panel == nil || p.Panel.FieldConfig == nil {
			continue
		}
		for _, l := range p.Panel.FieldConfig.Defaults.Links {
			urls = append(urls, *l.Url)
			latency = append(latency, *p.Panel.Title)
		}
	}
	if len(urls) < 2 || len(latency) == 0 || !strings.HasPrefix(latency[0], "Request latency") {
		t.Fatalf("want a dashboard link and a data link on the request latency panel, got %d link(s) on %v", len(urls), latency)
	}
	values := map[string]string{
		jaegerURLVar:            "http://jaeger.example:16686",
		traceServiceVar:         "plantstore",
		"__from":                "1700000000000",
		"__to":                  "1700003600000",
		"__field.labels.method": "GET",
		"__field.labels.route":  "/plants/{id}",
		"__value.raw":           "0.25",
	}
	for _, raw := range urls {
		for _, m := range dataLinkVariable.FindAllStringSubmatch(raw, -1) {
			name, format := m[1], m[2]
			if !vars[name] && !strings.HasPrefix(name, "__") {
				t.Errorf("%s: no variable %q", raw, name)
			}
			switch {
			case name == jaegerURLVar && format != "raw":
				t.Errorf("%s: the address must be ${%s:raw}, or Grafana percent-encodes its scheme", raw, name)
			case strings.HasPrefix(name, "__field.labels.") && format != "percentencode":
				t.Errorf("%s: label %s must be percent-encoded", raw, name)
			}
		}
		filled := dataLinkVariable.ReplaceAllStringFunc(raw, func(m string) string {
			sub := dataLinkVariable.FindStringSubmatch(m)
			v, ok := values[sub[1]]
			if !ok {
				t.Errorf("%s: no test value for %s", raw, sub[1])
			}
			if sub[2] == "percentencode" {
				return url.PathEscape(v)
			}
			return v
		})
		u, err := url.Parse(filled)
		if err != nil {
			t.Fatalf("%s: %v", filled, err)
		}
		q := u.Query()
		if u.Host != "jaeger.example:16686" || u.Path != "/search" || q.Get("service") != "plantstore" ||
			q.Get("start") != "1700000000000000" || q.Get("end") != "1700003600000000" || q.Get("lookback") != "custom" {
			t.Errorf("%s: not the Jaeger search of plantstore over the range in microseconds", filled)
		}
		if strings.Contains(raw, "__field.labels") {
			// The server span's name is "METHOD /route" (internal/httpapi).
			if got := q.Get("operation"); got != "GET /plants/{id}" {
				t.Errorf("%s: operation %q, want the span name %q", filled, got, "GET /plants/{id}")
			}
			if got := q.Get("minDuration"); got != "0.25s" {
				t.Errorf("%s: minDuration %q, want the clicked point's 0.25s", filled, got)
			}
		}
	}
}

// The rows table of docs/monitoring.md names the dashboard's rows, in order.
func TestDocsListTheRows(t *testing.T) {
	d, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, p := range d.Panels {
		if p.RowPanel != nil {
			rows = append(rows, *p.RowPanel.Title)
		}
	}
	data, err := os.ReadFile(filepath.Join(docgen.Root(t), "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Dashboard\n")
	if !ok {
		t.Fatal("docs/monitoring.md has no Dashboard section")
	}
	_, table, ok := strings.Cut(section, "| row | panels |\n|---|---|\n")
	if !ok {
		t.Fatal("the Dashboard section has no rows table")
	}
	var documented []string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			break
		}
		documented = append(documented, strings.TrimSpace(strings.Split(line, "|")[1]))
	}
	if strings.Join(documented, ", ") != strings.Join(rows, ", ") {
		t.Errorf("docs/monitoring.md lists the rows\n  %s\nthe dashboard has\n  %s", strings.Join(documented, ", "), strings.Join(rows, ", "))
	}
}
