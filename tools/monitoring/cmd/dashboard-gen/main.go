// Command dashboard-gen writes plantstore's Grafana dashboard,
// charts/plantstore/files/grafana-dashboard.json, from the typed builders of
// the Grafana Foundation SDK (dashboard.go), so that the file is Grafana's
// dashboard schema by construction. make generate runs it; make lint runs it
// with -check, which fails, with a diff, when the committed file is not what
// the code generates (an edit by hand, or a code change not regenerated).
//
//	dashboard-gen -out charts/plantstore/files/grafana-dashboard.json
//	dashboard-gen -check charts/plantstore/files/grafana-dashboard.json
//
// Its siblings read the file it writes: prom-check runs every target on a
// real Prometheus, dashboard-png draws the main panels, and the tests of
// tools/monitoring parse every expression and find every metric in a real
// scrape.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/pmezard/go-difflib/difflib"
)

func main() {
	out := flag.String("out", "", "write the dashboard to this file")
	check := flag.String("check", "", "fail, with a diff, when this file is not the generated dashboard")
	flag.Parse()
	if (*out == "") == (*check == "") || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "dashboard-gen: give exactly one of -out FILE and -check FILE")
		os.Exit(2)
	}
	var err error
	if *out != "" {
		err = write(*out)
	} else {
		err = checkFile(os.Stdout, *check)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard-gen:", err)
		os.Exit(1)
	}
}

// Render is the dashboard as the file holds it: two-space indented JSON in
// the SDK's field order, maps sorted by key, and a final newline.
func Render() ([]byte, error) {
	d, err := Build()
	if err != nil {
		return nil, fmt.Errorf("building the dashboard: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "<token>" readable in the descriptions
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("encoding the dashboard: %w", err)
	}
	return buf.Bytes(), nil
}

func write(path string) error {
	data, err := Render()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// errStale is checkFile's verdict when the file differs from the code.
var errStale = errors.New("is not what tools/monitoring/cmd/dashboard-gen generates; run make generate and commit the result")

// checkFile writes to w a diff from the file to the generated dashboard, and
// fails when there is one.
func checkFile(w io.Writer, path string) error {
	want, err := Render()
	if err != nil {
		return err
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if diff := Diff(path, got, want); diff != "" {
		fmt.Fprint(w, diff)
		return fmt.Errorf("%s %w", path, errStale)
	}
	fmt.Fprintf(w, "dashboard-gen: %s is what the code generates\n", path)
	return nil
}

// Diff is a unified diff from the file's content to the generated one, or ""
// when they are the same.
func Diff(path string, got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(string(got)),
		B:        difflib.SplitLines(string(want)),
		FromFile: path,
		ToFile:   "generated",
		Context:  3,
	})
	if err != nil || diff == "" { // e.g. only a missing final newline
		return fmt.Sprintf("--- %s\n+++ generated\n(the files differ in bytes that a line diff does not show, such as the final newline)\n", path)
	}
	return diff
}
