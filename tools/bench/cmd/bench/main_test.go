package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/tools/bench/internal/load"
	"github.com/plantstore/plantstore/tools/bench/internal/report"
)

func TestListening(t *testing.T) {
	log := `{"level":"info","msg":"using redis","addrs":["127.0.0.1:1"]}
not json, listening
{"level":"info","logger":"server","msg":"admin listening","addr":"127.0.0.1:43301"}
{"level":"info","logger":"server","msg":"API listening","addr":"127.0.0.1:34567"}
`
	api, admin := listening([]byte(log))
	if api != "127.0.0.1:34567" || admin != "127.0.0.1:43301" {
		t.Errorf("listening = %q, %q", api, admin)
	}
	if api, admin := listening([]byte(`{"msg":"API listening","addr":"127.0.0.1:1"}`)); api == "" || admin != "" {
		t.Errorf("half a start-up = %q, %q", api, admin)
	}
}

func TestFindRepo(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "tools", "bench", "cmd")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "go.mod"), "module github.com/plantstore/plantstore\n\ngo 1.26.0\n")
	write(filepath.Join(root, "tools", "go.mod"), "module github.com/plantstore/plantstore/tools\n")
	write(filepath.Join(root, "tools", "bench", "go.mod"), "module \"github.com/plantstore/plantstore/tools/bench\"\n")
	got, err := findRepo(sub)
	if err != nil || got != root {
		t.Errorf("findRepo = %q, %v; want %q", got, err, root)
	}
	if _, err := findRepo(t.TempDir()); err == nil {
		t.Error("findRepo outside a repository: no error")
	}
}

func TestNewToken(t *testing.T) {
	tok, line := newToken()
	tok2, _ := newToken()
	if len(tok) < 40 || tok == tok2 || len(line) != len("sha256:")+64+1 || line[:7] != "sha256:" {
		t.Errorf("newToken = %q, %q", tok, line)
	}
}

func TestChartAppendfsync(t *testing.T) {
	root, err := findRepo("")
	if err != nil {
		t.Fatal(err)
	}
	got, err := chartAppendfsync(root)
	if err != nil {
		t.Fatal(err)
	}
	if got != "always" && got != "everysec" && got != "no" {
		t.Errorf("chart's appendfsync %q, want always, everysec or no", got)
	}
	if _, err := chartAppendfsync(t.TempDir()); err == nil {
		t.Error("no error without a chart")
	}
}

func TestDeletePool(t *testing.T) {
	for _, tc := range []struct {
		peak  float64
		phase time.Duration
		want  int64
	}{
		{5000, 2500 * time.Millisecond, 3*5000*5/2 + 1000},
		{0, time.Second, 3*10000 + 1000},           // no create figure: a generous guess
		{math.Inf(1), time.Second, 3*10000 + 1000}, // nor an infinite one
		{math.NaN(), time.Second, 3*10000 + 1000},
	} {
		if got := deletePool(tc.peak, tc.phase); got != tc.want {
			t.Errorf("deletePool(%v, %v) = %d, want %d", tc.peak, tc.phase, got, tc.want)
		}
	}
}

func TestRouteOfEveryReportRoute(t *testing.T) {
	for _, name := range report.Routes {
		if r, err := routeOf(name, 10, load.NewDelete(1, 1)); err != nil || r == nil {
			t.Errorf("routeOf(%q) = %v, %v", name, r, err)
		}
	}
	if _, err := routeOf("PATCH /plants", 10, nil); err == nil {
		t.Error("routeOf of an unknown route: no error")
	}
}

func TestParseConns(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"10,200", []int{10, 200}, false},
		{" 200, 10,10 ", []int{10, 200}, false},
		{"10,50,200", []int{10, 200}, false}, // 50 is -conns: the round's own closed loop
		{"", nil, false},
		{"10,,", []int{10}, false},
		{"0", nil, true},
		{"-5", nil, true},
		{"ten", nil, true},
	} {
		got, err := parseConns(tc.in, 50)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("parseConns(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestPairAlternates(t *testing.T) {
	for i, want := range [][]string{
		{report.Floor, report.Service}, // round 1
		{report.Service, report.Floor},
		{report.Floor, report.Service},
	} {
		if got := pair(i); !slices.Equal(got, want) {
			t.Errorf("pair(%d) = %v, want %v", i, got, want)
		}
	}
	rs := []*running{{v: variant{name: report.Floor}}, {v: variant{name: report.Service}}, {v: variant{name: report.AllSampled}}}
	got := inOrder(rs, append(pair(1), report.AllSampled))
	if len(got) != 3 || got[0] != rs[1] || got[1] != rs[0] || got[2] != rs[2] {
		t.Errorf("inOrder of round 2 = %v", got)
	}
}

func TestParseEnv(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "", want: nil},
		{in: " GOGC=200  OTEL_TRACES_SAMPLER=always_off ", want: []string{"GOGC=200", "OTEL_TRACES_SAMPLER=always_off"}},
		{in: "EMPTY=", want: []string{"EMPTY="}},
		{in: "GOGC", err: true},
		{in: "=200", err: true},
	} {
		got, err := parseEnv(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("parseEnv(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestInfoInt(t *testing.T) {
	info := "# Persistence\r\naof_enabled:1\r\naof_current_size:4096\r\naof_base_size:notanumber\r\n"
	for _, tc := range []struct {
		field string
		want  int64
		err   bool
	}{
		{field: "aof_current_size", want: 4096},
		{field: "aof_enabled", want: 1},
		{field: "aof_base_size", err: true}, // not an integer
		{field: "aof_current", err: true},   // a prefix of a field is not the field
		{field: "total_forks", err: true},   // absent
	} {
		got, err := infoInt(info, tc.field)
		if tc.err {
			if err == nil {
				t.Errorf("infoInt(%s) = %d, want an error", tc.field, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("infoInt(%s) = %d, %v; want %d", tc.field, got, err, tc.want)
		}
	}
}

// The committed figures block, sizing block and charts are what -render
// and -render -scale write from the committed runs' data: a hand edit of a
// block, a renderer changed without rendering again, or data and report
// from different runs fail here. gonum/plot draws the same bytes from the
// same data.
func TestDocsAreTheRunData(t *testing.T) {
	root, err := findRepo("")
	if err != nil {
		t.Fatal(err)
	}
	docs, dir := filepath.Join(root, "docs"), t.TempDir()
	committed := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(docs, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	run, err := report.Decode[report.Run](committed("performance.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Short || len(run.Failures) > 0 {
		t.Errorf("docs/performance.json is a short or failed run (short %v, failures %q): commit a full make bench-load", run.Short, run.Failures)
	}
	sr, err := report.Decode[report.ScaleRun](committed("performance-scale.json"))
	if err != nil {
		t.Fatal(err)
	}
	if sr.Short || len(sr.Failures) > 0 || len(sr.Sizes) < 4 {
		t.Errorf("docs/performance-scale.json: short %v, failures %q, %d sizes: commit a full make bench-scale", sr.Short, sr.Failures, len(sr.Sizes))
	}
	out := filepath.Join(dir, "performance.md")
	if err := os.WriteFile(out, committed("performance.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := write(run, out, filepath.Join(dir, filepath.FromSlash(run.PNG)), false); err != nil {
		t.Fatal(err)
	}
	scaleData, scalePNG := scalePaths(out)
	if err := writeScale(sr, out, scalePNG, scaleData); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"performance.md", run.PNG, filepath.Base(scalePNG), filepath.Base(scaleData)} {
		want := committed(name)
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("docs/%s is not what `cd tools/bench && go run ./cmd/bench -render` and `-scale -render` write from "+
				"docs/performance.json and docs/performance-scale.json (%v): render them again after a renderer change, "+
				"or run make bench-load or bench-scale.%s", name, err, firstDiff(name, want, got))
		}
	}
}

// firstDiff shows the first line where the committed text file name
// differs from what was rendered.
func firstDiff(name string, committed, rendered []byte) string {
	if filepath.Ext(name) != ".md" {
		return ""
	}
	g, w := strings.Split(string(committed), "\n"), strings.Split(string(rendered), "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	line := func(ls []string) string {
		if i < len(ls) {
			return ls[i]
		}
		return "(end of file)"
	}
	return fmt.Sprintf(" Line %d:\n got: %s\nwant: %s", i+1, line(g), line(w))
}
