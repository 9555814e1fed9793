package monitoring

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/rulefmt"
	"gopkg.in/yaml.v3"

	"github.com/plantstore/plantstore/internal/docgen"
)

const runbookPrefix = "https://github.com/plantstore/plantstore/blob/main/docs/monitoring.md#"

// Every alert has a severity the routing knows, a summary, a description
// and a runbook_url whose anchor is a heading of docs/monitoring.md.
func TestAlertsHaveSeverityAndRunbook(t *testing.T) {
	groups, errs := rulefmt.ParseFile(chartFile(t, rulesFile), false)
	if len(errs) > 0 {
		t.Fatalf("loading the rules: %v", errs)
	}
	doc, err := os.ReadFile(filepath.Join(docgen.Root(t), "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := markdownAnchors(string(doc))
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if s := r.Labels["severity"]; s != "page" && s != "ticket" {
				t.Errorf("alert %s: severity %q, want page or ticket", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("alert %s has no %s annotation", r.Alert, a)
				}
			}
			url := r.Annotations["runbook_url"]
			anchor, ok := strings.CutPrefix(url, runbookPrefix)
			if !ok {
				t.Errorf("alert %s: runbook_url %q does not point into docs/monitoring.md", r.Alert, url)
			} else if !anchors[anchor] {
				t.Errorf("alert %s: docs/monitoring.md has no heading with anchor #%s", r.Alert, anchor)
			}
		}
	}
}

// markdownAnchors returns the anchors GitHub gives the document's headings:
// lower case, spaces to hyphens, punctuation dropped.
func markdownAnchors(doc string) map[string]bool {
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	anchors := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := strings.ToLower(drop.ReplaceAllString(title, ""))
		anchors[strings.ReplaceAll(a, " ", "-")] = true
	}
	return anchors
}

// The promtool tests make every alert fire in some scenario, and check in
// the first scenario, a healthy service, that none fires.
func TestPromtoolTestsCoverEveryAlert(t *testing.T) {
	rules, _ := parseRules(t)
	data, err := os.ReadFile(chartFile(t, rulesTestFile))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tests []struct {
			Name          string `yaml:"name"`
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Tests) == 0 {
		t.Fatal("no test in the promtool test file")
	}
	fires := map[string]bool{}
	quietWhenHealthy := map[string]bool{}
	for i, tg := range file.Tests {
		for _, a := range tg.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else if i == 0 {
				quietWhenHealthy[a.Alertname] = true
			}
		}
	}
	for _, a := range rules.Alerts {
		if !fires[a] {
			t.Errorf("no promtool test makes %s fire", a)
		}
		if !quietWhenHealthy[a] {
			t.Errorf("the healthy scenario (%q) does not check that %s stays quiet", file.Tests[0].Name, a)
		}
	}
}
