package chart

import (
	"path/filepath"
	"strings"
	"testing"
)

// releasedCharts are the charts users upgrade from (testdata/released).
var releasedCharts = []struct{ file, version string }{
	{"chart-0.1.0-first.values.yaml", "0.1.0"},
	{"chart-0.1.0-app-1.0.0.values.yaml", "0.1.0"},
	{"chart-1.1.0.values.yaml", "1.1.0"},
}

// The flags users type to upgrade from every released chart, with and
// without values of their own: --reset-then-reuse-values (this chart's
// defaults, then the user's values) renders what a plain upgrade with the
// same values renders; --reuse-values (the old chart's defaults, none of this
// chart's) fails with a message that says what to type instead, never with a
// nil pointer, and never renders half an upgrade.
func TestUpgradeWithTheFlagsUsersType(t *testing.T) {
	userConfigs := map[string]map[string]any{
		"no values": {},
		"values":    {"replicaCount": 3, "podAnnotations": map[string]any{"team": "plants"}},
	}
	for _, from := range releasedCharts {
		oldValues := readYAML(t, filepath.Join("testdata", "released", from.file))
		for configName, config := range userConfigs {
			old := installed{ChartVersion: from.version, ChartValues: oldValues, Config: config}
			t.Run(from.file+"/"+configName+"/--reset-then-reuse-values", func(t *testing.T) {
				got, err := renderUpgrade(t, old, upgradeFlags{ResetThenReuseValues: true}, nil)
				if err != nil {
					t.Fatalf("helm upgrade --reset-then-reuse-values: %v", err)
				}
				want, err := renderUpgrade(t, old, upgradeFlags{}, config)
				if err != nil {
					t.Fatalf("helm upgrade -f values: %v", err)
				}
				if d := diffObjects(want, got); d != "" {
					t.Errorf("differs from an upgrade given the same values:\n%s", d)
				}
				deploy := got.get(t, "Deployment", "plantstore")
				if n, _ := dig(deploy.Obj, "spec", "replicas").(float64); config["replicaCount"] != nil && int(n) != 3 {
					t.Errorf("replicas %v: the user's replicaCount was lost", n)
				}
			})
			t.Run(from.file+"/"+configName+"/--reuse-values", func(t *testing.T) {
				_, err := renderUpgrade(t, old, upgradeFlags{ReuseValues: true}, nil)
				if err == nil {
					t.Fatal("helm upgrade --reuse-values rendered with an older chart's defaults")
				}
				wantContains(t, "the error", err.Error(), "these values are an older chart's", "--reset-then-reuse-values")
				if strings.Contains(err.Error(), "nil pointer") {
					t.Errorf("a nil pointer, not the message: %v", err)
				}
			})
		}
	}
	// --reuse-values over this chart's own values (a second upgrade) works.
	current := installed{ChartVersion: "now", ChartValues: loadChart(t).Values, Config: userConfigs["values"]}
	if _, err := renderUpgrade(t, current, upgradeFlags{ReuseValues: true}, nil); err != nil {
		t.Errorf("helm upgrade --reuse-values from this chart: %v", err)
	}
}

// diffObjects names the objects two renders do not share, or render apart.
func diffObjects(a, b rendered) string {
	var out []string
	index := func(r rendered) map[string]string {
		m := map[string]string{}
		for _, o := range r.Objects {
			m[o.Kind()+"/"+o.Name()] = o.Text
		}
		return m
	}
	ia, ib := index(a), index(b)
	for k, v := range ia {
		if w, ok := ib[k]; !ok {
			out = append(out, "only in the first: "+k)
		} else if v != w {
			out = append(out, k+": "+firstDiff(v, w))
		}
	}
	for k := range ib {
		if _, ok := ia[k]; !ok {
			out = append(out, "only in the second: "+k)
		}
	}
	return strings.Join(out, "\n")
}
