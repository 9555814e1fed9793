package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

func committedPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "charts", "plantstore", "files", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The chart's file is what the code generates (make lint checks the same).
func TestCommittedDashboardIsGenerated(t *testing.T) {
	var out bytes.Buffer
	if err := checkFile(&out, committedPath(t)); err != nil {
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
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "monitoring.md"))
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
