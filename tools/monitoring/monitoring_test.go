package monitoring

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/plantstore/plantstore/internal/docgen"
)

// chartFile is a file of the chart's files/ directory.
func chartFile(t testing.TB, name string) string {
	return filepath.Join(docgen.Root(t), "charts", "plantstore", "files", name)
}

const (
	rulesFile     = "prometheus-rules.yaml"
	rulesTestFile = "prometheus-rules.test.yaml"
	dashboardFile = "grafana-dashboard.json"
)

// parsed is an expression with its AST.
type parsed struct {
	Expression
	Expr parser.Expr
}

// parseAll parses exprs, their Grafana variables filled in from values (the
// rules, nil, have none), failing the test with each one that is empty or
// does not parse.
func parseAll(t testing.TB, exprs []Expression, values map[string]string) []parsed {
	t.Helper()
	var out []parsed
	for _, e := range exprs {
		if strings.TrimSpace(e.Text) == "" {
			t.Errorf("%s has no expression", e.Where)
			continue
		}
		text := e.Text
		if values != nil {
			var err error
			if text, err = SubstituteGrafanaVariables(e.Text, values); err != nil {
				t.Errorf("%s: %v\n%s", e.Where, err, e.Text)
				continue
			}
		}
		expr, err := parser.ParseExpr(text)
		if err != nil {
			t.Errorf("%s does not parse: %v\n%s\n(with the variables filled in: %s)", e.Where, err, e.Text, text)
			continue
		}
		out = append(out, parsed{e, expr})
	}
	return out
}

// parseRules parses every expression of the rules file.
func parseRules(t testing.TB) (Rules, []parsed) {
	t.Helper()
	rules, err := LoadRules(chartFile(t, rulesFile))
	if err != nil {
		t.Fatalf("loading the rules: %v", err)
	}
	if len(rules.Expressions) == 0 {
		t.Fatal("the rules file holds no rule")
	}
	return rules, parseAll(t, rules.Expressions, nil)
}

func loadDashboard(t testing.TB) Dashboard {
	t.Helper()
	d, err := LoadDashboard(chartFile(t, dashboardFile))
	if err != nil {
		t.Fatalf("loading the dashboard: %v", err)
	}
	return d
}

// parseDashboard parses every target expression of the dashboard with the
// given values of the Grafana variables.
func parseDashboard(t testing.TB, values map[string]string) []parsed {
	t.Helper()
	exprs := loadDashboard(t).Expressions()
	if len(exprs) == 0 {
		t.Fatal("the dashboard has no target")
	}
	return parseAll(t, exprs, values)
}

// parseVariables parses the selectors of the dashboard's label_values()
// variable queries.
func parseVariables(t testing.TB) []parsed {
	t.Helper()
	return parseAll(t, loadDashboard(t).VariableExpressions(), GrafanaValues)
}

func TestRuleExpressionsParse(t *testing.T) {
	rules, exprs := parseRules(t)
	t.Logf("parsed %d rule expressions (%d recording rules, %d alerting rules)",
		len(exprs), len(rules.Recorded), len(rules.Alerts))
}

func TestDashboardExpressionsParse(t *testing.T) {
	exprs, vars := parseDashboard(t, GrafanaValues), parseVariables(t)
	t.Logf("parsed %d dashboard target expressions and %d variable selectors", len(exprs), len(vars))
}

// Every SLO needs its seven windows recorded and the two alerts the workbook
// prescribes; the cause alerts must be there too.
func TestRulesCoverTheSLOs(t *testing.T) {
	rules, _ := parseRules(t)
	windows := []string{"5m", "30m", "1h", "2h", "6h", "1d", "3d"}
	for _, sli := range []string{"job:plantstore_availability_errors", "job:plantstore_plants_latency_slow"} {
		for _, w := range windows {
			if name := sli + ":ratio_rate" + w; !slices.Contains(rules.Recorded, name) {
				t.Errorf("no recording rule %s", name)
			}
		}
	}
	for _, a := range []string{
		"PlantstoreAvailabilityFastBurn", "PlantstoreAvailabilitySlowBurn",
		"PlantstoreLatencyFastBurn", "PlantstoreLatencySlowBurn",
		"PlantstoreDown", "PlantstoreAbsent", "PlantstoreStoreUnavailable", "PlantstoreTokenReloadFailing",
	} {
		if !slices.Contains(rules.Alerts, a) {
			t.Errorf("no alert %s", a)
		}
	}
}

// The rules select the plantstore job only, so that a shared Prometheus
// evaluates them on plantstore's series alone.
func TestRuleSelectorsSelectTheJob(t *testing.T) {
	_, exprs := parseRules(t)
	for _, e := range exprs {
		for _, vs := range VectorSelectors(e.Expr) {
			if !hasMatcher(vs, "job", labels.MatchEqual, "plantstore") {
				t.Errorf("%s: selector %s lacks job=\"plantstore\"", e.Where, vs)
			}
		}
	}
}

// Every dashboard selector honours the job and instance variables; those of
// the Redis exporter's metrics select the job variable's Redis job (the
// instance variable lists the service's instances).
func TestDashboardSelectorsUseTheVariables(t *testing.T) {
	const jobMark, instanceMark = "__grafana_job__", "__grafana_instance__"
	values := maps.Clone(GrafanaValues)
	values["job"], values["instance"] = jobMark, instanceMark
	exprs := parseDashboard(t, values)
	redis := 0
	for _, e := range exprs {
		for _, vs := range VectorSelectors(e.Expr) {
			if FromRedisExporter(SelectorName(vs)) {
				redis++
				if !hasMatcher(vs, "job", labels.MatchRegexp, jobMark+RedisJobSuffix) || hasMatcher(vs, "instance", labels.MatchRegexp, instanceMark) {
					t.Errorf("%s: selector %s of the Redis exporter lacks job=~\"$job%s\" or has the service's instance=~\"$instance\"", e.Where, vs, RedisJobSuffix)
				}
				continue
			}
			if !hasMatcher(vs, "job", labels.MatchRegexp, jobMark) || !hasMatcher(vs, "instance", labels.MatchRegexp, instanceMark) {
				t.Errorf("%s: selector %s lacks job=~\"$job\", instance=~\"$instance\"", e.Where, vs)
			}
		}
	}
	if redis == 0 {
		t.Error("no selector of the Redis exporter's metrics: the Redis row is gone")
	}
}

func hasMatcher(vs *parser.VectorSelector, name string, typ labels.MatchType, value string) bool {
	for _, m := range vs.LabelMatchers {
		if m.Name == name && m.Type == typ && m.Value == value {
			return true
		}
	}
	return false
}

func TestDashboardStructure(t *testing.T) {
	d := loadDashboard(t)
	if d.UID != "plantstore" {
		t.Errorf("uid = %q, want plantstore", d.UID)
	}
	if d.SchemaVersion < 39 {
		t.Errorf("schemaVersion = %d, want 39 or later", d.SchemaVersion)
	}

	vars := map[string]Variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v, ok := vars["datasource"]; !ok || v.Type != "datasource" || string(v.Query) != `"prometheus"` {
		t.Errorf("want a datasource variable of type datasource querying prometheus, got %+v", v)
	}
	if v, ok := vars["job"]; !ok {
		t.Error("no job variable")
	} else if got := string(v.Current.Value); got != `"plantstore"` {
		t.Errorf("job variable defaults to %s, want \"plantstore\"", got)
	}
	if v, ok := vars["instance"]; !ok || !v.Multi || !v.IncludeAll {
		t.Errorf("want a multi-value instance variable with All, got %+v", v)
	}

	ids := map[int]string{}
	for _, p := range d.AllPanels() {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if other, dup := ids[p.ID]; dup {
			t.Errorf("%s: id already used by %q", where, other)
		}
		ids[p.ID] = p.Title
		if p.Title == "" {
			t.Errorf("%s has no title", where)
		}
		var pos struct{ H, W, X, Y *int }
		if err := json.Unmarshal(p.GridPos, &pos); err != nil || pos.H == nil || pos.W == nil || pos.X == nil || pos.Y == nil {
			t.Errorf("%s has no complete gridPos: %s", where, p.GridPos)
		} else if *pos.X+*pos.W > 24 {
			t.Errorf("%s is wider than the grid: %s", where, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s has no target", where)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("%s does not use the datasource variable: %+v", where, p.Datasource)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("%s: missing or repeated refId %q", where, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
				t.Errorf("%s target %s does not use the datasource variable: %+v", where, tg.RefID, tg.Datasource)
			}
		}
	}
}

func TestSubstituteGrafanaVariables(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`rate(x{job=~"$job"}[$__rate_interval])`, `rate(x{job=~"plantstore"}[1m])`},
		{`rate(x{instance=~"${instance}"}[${__interval}])`, `rate(x{instance=~"127.0.0.1:9090"}[30s])`},
		{`increase(x[$__range]) / $__range_s`, `increase(x[6h]) / 21600`},
		{`x{instance=~"${instance:regex}"}`, `x{instance=~"127.0.0.1:9090"}`},
	} {
		got, err := SubstituteGrafanaVariables(c.in, GrafanaValues)
		if err != nil || got != c.want {
			t.Errorf("SubstituteGrafanaVariables(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := SubstituteGrafanaVariables(`x{a="$nope"}`, GrafanaValues); err == nil {
		t.Error("an unknown variable was accepted")
	}
}
