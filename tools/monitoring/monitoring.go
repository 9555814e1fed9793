// Package monitoring checks plantstore's monitoring assets against the
// service: the Prometheus rules (charts/plantstore/files/prometheus-rules.yaml),
// their promtool unit tests and the Grafana dashboard
// (charts/plantstore/files/grafana-dashboard.json).
//
// Its tests parse every PromQL expression of the rules and of every dashboard
// target, run promtool check rules and promtool test rules, and scrape a real
// plantstore (built from this repository, on a real redis-server) to prove
// that every metric the rules and the dashboard read is one the service
// exposes. The helpers here extract and parse the expressions.
package monitoring

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// RedisJobSuffix ends the job of the chart's Redis exporter (redis.metrics):
// its ServiceMonitor pins the job to serviceMonitor.jobName and this suffix,
// and the dashboard's Redis row selects job=~"$job-redis".
const RedisJobSuffix = "-redis"

// FromRedisExporter says whether a metric the dashboard or the rules read is
// one of the Redis exporter's (oliver006/redis_exporter, namespace redis)
// rather than the service's: the service's own Redis metrics are
// plantstore_redis_*.
func FromRedisExporter(name string) bool { return strings.HasPrefix(name, "redis_") }

// Expression is one PromQL expression of the rules file or the dashboard.
type Expression struct {
	// Where names it for a person: the rule group and rule, or the panel and
	// target.
	Where string
	// Text is the expression as written; in the dashboard, with the Grafana
	// variables still in it.
	Text string
}

// Rules is what the rules file holds that the checks need.
type Rules struct {
	Expressions []Expression
	// Recorded lists the names the recording rules produce.
	Recorded []string
	// Alerts lists the alerting rules' names (a name may appear twice).
	Alerts []string
}

// LoadRules reads a Prometheus rule file (groups:) and returns its rules'
// expressions. It fails on a file that promtool would refuse.
func LoadRules(path string) (Rules, error) {
	groups, errs := rulefmt.ParseFile(path, false)
	if len(errs) > 0 {
		return Rules{}, errors.Join(errs...)
	}
	var r Rules
	for _, g := range groups.Groups {
		for i, rule := range g.Rules {
			name := rule.Record
			kind := "record"
			if rule.Alert != "" {
				name, kind = rule.Alert, "alert"
				r.Alerts = append(r.Alerts, rule.Alert)
			} else {
				r.Recorded = append(r.Recorded, rule.Record)
			}
			r.Expressions = append(r.Expressions, Expression{
				Where: fmt.Sprintf("rule group %q rule %d (%s %s)", g.Name, i+1, kind, name),
				Text:  rule.Expr,
			})
		}
	}
	return r, nil
}

// Dashboard is the part of a Grafana dashboard the checks read.
type Dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel; a row holds its panels in Panels when collapsed.
type Panel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Datasource  *DatasourceRef  `json:"datasource"`
	Targets     []Target        `json:"targets"`
	Panels      []Panel         `json:"panels"`
	GridPos     json.RawMessage `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

// Target is one query of a panel.
type Target struct {
	RefID        string         `json:"refId"`
	Expr         string         `json:"expr"`
	Datasource   *DatasourceRef `json:"datasource"`
	LegendFormat string         `json:"legendFormat"`
	Exemplar     bool           `json:"exemplar"`
}

// DatasourceRef points a panel or target at a data source.
type DatasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Variable is a dashboard template variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	Current    struct {
		Value json.RawMessage `json:"value"`
	} `json:"current"`
}

// LoadDashboard reads a Grafana dashboard JSON file.
func LoadDashboard(path string) (Dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Dashboard{}, err
	}
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return Dashboard{}, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// AllPanels returns every panel, including those inside collapsed rows.
func (d Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Expressions returns the expression of every target of every panel.
func (d Dashboard) Expressions() []Expression {
	var out []Expression
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			out = append(out, Expression{
				Where: fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, t.RefID),
				Text:  t.Expr,
			})
		}
	}
	return out
}

// labelValuesQuery matches a Prometheus variable query label_values(selector, label).
var labelValuesQuery = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$`)

// VariableExpressions returns the series selectors of the query variables
// written as label_values(selector, label); variables of other kinds, and
// label_values(label) without a selector, have none.
func (d Dashboard) VariableExpressions() []Expression {
	var out []Expression
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if json.Unmarshal(v.Query, &q) != nil {
			var obj struct {
				Query string `json:"query"`
			}
			if json.Unmarshal(v.Query, &obj) != nil {
				continue
			}
			q = obj.Query
		}
		if m := labelValuesQuery.FindStringSubmatch(q); m != nil {
			out = append(out, Expression{Where: fmt.Sprintf("variable %q", v.Name), Text: m[1]})
		}
	}
	return out
}

// GrafanaValues are concrete values for the variables the dashboard's
// expressions may use, the way Grafana would fill them in.
var GrafanaValues = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "30s",
	"__interval_ms":   "30000",
	"__range":         "6h",
	"__range_s":       "21600",
	"__range_ms":      "21600000",
	"job":             "plantstore",
	"instance":        "127.0.0.1:9090",
}

// grafanaVariable matches $name, ${name} and ${name:format}.
var grafanaVariable = regexp.MustCompile(`\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))`)

// SubstituteGrafanaVariables replaces the Grafana variables in expr by their
// values; a variable missing from values is an error.
func SubstituteGrafanaVariables(expr string, values map[string]string) (string, error) {
	var unknown []string
	out := grafanaVariable.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVariable.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		v, ok := values[name]
		if !ok {
			unknown = append(unknown, m)
			return m
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown Grafana variable(s) %s", strings.Join(unknown, ", "))
	}
	return out, nil
}

// MetricNames returns the sorted metric names the expression's vector
// selectors read: a selector's name, or its __name__="..." matcher.
func MetricNames(e parser.Expr) []string {
	set := map[string]bool{}
	for _, vs := range VectorSelectors(e) {
		if name := SelectorName(vs); name != "" {
			set[name] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SelectorName is the metric name a vector selector reads, or "" when it
// selects by something else than an exact name.
func SelectorName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

// VectorSelectors returns every vector selector of the expression, including
// those inside range selectors and subqueries.
func VectorSelectors(e parser.Expr) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// LabelUses maps each metric name the expression reads to the label names
// it relies on: those of the selector's matchers, and the grouping labels
// (by, on, ignoring) of every aggregation or binary operation above it.
func LabelUses(e parser.Expr) map[string]map[string]bool {
	uses := map[string]map[string]bool{}
	parser.Inspect(e, func(n parser.Node, path []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := SelectorName(vs)
		if name == "" {
			return nil
		}
		if uses[name] == nil {
			uses[name] = map[string]bool{}
		}
		for _, m := range vs.LabelMatchers {
			uses[name][m.Name] = true
		}
		for _, p := range path {
			var grouping []string
			switch p := p.(type) {
			case *parser.AggregateExpr:
				if !p.Without {
					grouping = p.Grouping
				}
			case *parser.BinaryExpr:
				if p.VectorMatching != nil && p.VectorMatching.On {
					grouping = p.VectorMatching.MatchingLabels
				}
			}
			for _, l := range grouping {
				uses[name][l] = true
			}
		}
		return nil
	})
	return uses
}
