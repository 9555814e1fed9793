package report

import (
	"bytes"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/tools/bench/internal/cpuprof"
)

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/plantstore/plantstore/internal/perf
cpu: Intel(R) Xeon(R) CPU @ 2.20GHz
BenchmarkChain/store=redis/telemetry=off-2         	   20000	     51234 ns/op	    2345 B/op	      31 allocs/op
BenchmarkChain/store=redis/telemetry=on-2          	   20000	     61234.5 ns/op	    5345 B/op	      71 allocs/op
BenchmarkChain/store=redis/telemetry=all-sampled   	   20000	     81234 ns/op
--- FAIL: BenchmarkOther
PASS
ok  	github.com/plantstore/plantstore/internal/perf	5.123s
`
	got := ParseGoBench(out)
	if len(got) != 3 {
		t.Fatalf("ParseGoBench: %d results, want 3: %+v", len(got), got)
	}
	if b := got[0]; b.Name != "Chain/store=redis/telemetry=off" || b.Iterations != 20000 || b.NsPerOp != 51234 || b.BytesPerOp != 2345 || b.AllocsPerOp != 31 {
		t.Errorf("first = %+v", b)
	}
	if b := got[1]; b.NsPerOp != 61234.5 || b.AllocsPerOp != 71 {
		t.Errorf("second = %+v", b)
	}
	if b := got[2]; b.Name != "Chain/store=redis/telemetry=all-sampled" || b.AllocsPerOp != 0 {
		t.Errorf("third = %+v", b)
	}
}

// The harness rewrites only the figures block: the hand-written text
// around it survives every run byte for byte, and a second rendering of
// the same run changes nothing.
func TestMarkdownKeepsTextOutsideTheBlock(t *testing.T) {
	before := "# Mine\n\nThe  method, *as written*.\n\n"
	after := "\n## Decision record\n\n| idea | kept |\n"
	prev := []byte(before + FiguresBegin + "\nstale figures\n" + FiguresEnd + after)
	md, err := FiguresSection.Replace(prev, Figures(sampleRun()))
	if err != nil {
		t.Fatal(err)
	}
	want := before + FiguresBegin + "\n" + string(Figures(sampleRun())) + FiguresEnd + after
	if string(md) != want {
		t.Errorf("Replace =\n%s\nwant\n%s", md, want)
	}
	again, err := FiguresSection.Replace(md, Figures(sampleRun()))
	if err != nil || !bytes.Equal(again, md) {
		t.Errorf("a second rendering changed the document (%v)", err)
	}
	if block, err := FiguresSection.Of(md); err != nil || !bytes.Equal(block, Figures(sampleRun())) {
		t.Errorf("Block = %q, %v", block, err)
	}
}

func TestMarkdownNeedsOneBlock(t *testing.T) {
	for name, doc := range map[string]string{
		"no markers":      "# Performance\n\nall by hand\n",
		"begin only":      FiguresBegin + "\n",
		"end before":      FiguresEnd + "\n" + FiguresBegin + "\n",
		"two blocks":      FiguresBegin + FiguresEnd + FiguresBegin + FiguresEnd,
		"empty, existing": "",
	} {
		if _, err := FiguresSection.Replace([]byte(doc), Figures(sampleRun())); !errors.Is(err, ErrNoFigures) {
			t.Errorf("%s: Replace error %v, want ErrNoFigures", name, err)
		}
	}
	md, err := FiguresSection.Replace(nil, Figures(sampleRun()))
	if err != nil || !strings.HasPrefix(string(md), "# Performance") || !strings.Contains(string(md), "| issue | target |") {
		t.Errorf("a new report: %v\n%s", err, md)
	}
}

func TestRunDataRoundTrip(t *testing.T) {
	r := withSweep(withRoutes(sampleRun()))
	r.Profile = sampleProfile()
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode[Run](b)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Figures(back), Figures(r); !bytes.Equal(got, want) {
		t.Errorf("figures from the decoded run differ:\n%s\nwant\n%s", got, want)
	}
	r.Rounds[0].Measures[Floor].CPUPer1k = math.NaN()
	if _, err := Encode(r); err == nil {
		t.Error("a run with a figure that is not a number was encoded")
	}
	if _, err := Decode[Run]([]byte(`{"Rounds": [], "Renamed": 1}`)); err == nil {
		t.Error("data with a field the run does not have was decoded")
	}
}

// markdown is the report of r as a new file.
func markdown(t *testing.T, r *Run) string {
	t.Helper()
	md, err := FiguresSection.Replace(nil, Figures(r))
	if err != nil {
		t.Fatal(err)
	}
	return string(md)
}

func sampleRun() *Run {
	r := &Run{Fractions: []float64{0.25, 0.5, 0.75}, Conns: 50, OTLPExports: map[string]int64{}, OTLPBytes: map[string]int64{}, AccessLines: map[string]int64{}}
	for i := range 3 {
		k := float64(i)
		rd := Round{Rates: []float64{250, 500, 750}, Measures: map[string]*Measure{}}
		for v, peak := range map[string]float64{Service: 900 + k, AllSampled: 750, Floor: 1000} {
			m := &Measure{ReadyMs: 50, IdleRSS: 20, PeakRSS: 40, ClosedRSS: 30, Peak: peak, CPUPer1k: 0.1, Statuses: map[int]int64{200: 10}}
			for j, rate := range rd.Rates {
				m.Open = append(m.Open, Latency{Rate: rate, Achieved: rate, Scheduled: 10, Answered: 10, P50: 1 + float64(j), P99: 2 + float64(j) + k, P999: 9})
			}
			rd.Measures[v] = m
		}
		r.Rounds = append(r.Rounds, rd)
	}
	return r
}

func TestTargetsAndTables(t *testing.T) {
	r := sampleRun()
	if bad := r.Incomplete(); len(bad) != 1 || !strings.Contains(bad[0], "allocations") {
		t.Errorf("Incomplete = %v, want only the missing allocations", bad)
	}
	tg := r.Targets()
	// 0.900, 0.901, 0.902 of the floor: median 0.901.
	if math.Abs(tg[0].Measured.Median-0.901) > 1e-9 || !tg[0].Pass() {
		t.Errorf("peak target = %+v", tg[0])
	}
	if tg[1].Measured.Median != 0.75 || !tg[1].Pass() {
		t.Errorf("all-sampled target = %+v", tg[1])
	}
	// p99 at 50 %: 3, 4, 5 ms: median 4.
	if tg[2].Measured.Median != 4 || tg[2].Measured.Min != 3 || tg[2].Measured.Max != 5 || !tg[2].Pass() {
		t.Errorf("p99 target = %+v", tg[2])
	}
	r.AllocsCommand = "go test -bench Chain"
	r.Allocs = []Bench{{Name: "Chain/store=redis/telemetry=off", NsPerOp: 50000, BytesPerOp: 2000, AllocsPerOp: 40},
		{Name: "Chain/store=redis/telemetry=all-sampled", NsPerOp: 80000, BytesPerOp: 12000, AllocsPerOp: 120}}
	r.Rounds[0].Measures[Service].Non200 = 3
	r.Rounds[0].Measures[Service].Statuses[401] = 3
	if bad := r.Incomplete(); len(bad) != 1 || !strings.Contains(bad[0], "3×401") {
		t.Errorf("Incomplete with failures = %v", bad)
	}
	md := markdown(t, r)
	contains(t, "markdown", md, "| 5 | service peak ≥ 0.85 × floor | 0.901 (0.900–0.902) × | PASS |", "| creates, 50 connections | 901 (900–902) | 1000 | 0.901 (0.900–0.902) |",
		"| creates, 50 connections, service-all-sampled | 750 | 1000 | 0.750 |", "| 25 % of peak | 250 | 1.00 / 3.00 / 9.00 | 1.00 / 3.00 / 9.00 | 1.00 / 3.00 / 9.00 | 1.00; 1.00 | 0.00; 0.00; 0.00 |",
		"Handler chain in-process (`go test -bench Chain`):\n\n| Chain/store=redis/telemetry=… | ns/op | B/op | allocs/op |\n|---|---|---|---|\n"+
			"| off | 50000 | 2000 | 40 |\n| all-sampled | 80000 | 12000 | 120 |\n")
}

// withRoutes adds the 1.1.0 routes to sampleRun's rounds: the service at
// 0.95, 0.85, 0.90 × the floor on GET, 0.80 × on the others.
func withRoutes(r *Run) *Run {
	r.RouteDuration, r.RouteWarmup, r.RouteFill = 2e9, 5e8, 10000
	for i, rd := range r.Rounds {
		for _, v := range RouteVariants {
			rd.Measures[v].Routes = map[string]*ClosedMeasure{}
			for _, route := range Routes {
				peak := 1000.0
				if v == Service {
					peak = 800
					if route == RouteGet {
						peak = []float64{950, 850, 900}[i]
					}
				}
				rd.Measures[v].Routes[route] = &ClosedMeasure{Peak: peak, Requests: 100, CPUPer1k: 0.1, P50: 1, P99: 2, Statuses: map[int]int64{200: 100}}
			}
		}
	}
	return r
}

func TestRouteTargetsAndTables(t *testing.T) {
	// Issue 5's five, and issue 15's creates at 50 connections and p99 at 25 %.
	if tg := sampleRun().Targets(); len(tg) != 7 {
		t.Errorf("a run without routes nor sweep has %d targets, want 7", len(tg))
	}
	r := withRoutes(sampleRun())
	if bad := r.Incomplete(); len(bad) != 1 {
		t.Errorf("Incomplete = %v, want only the missing allocations", bad)
	}
	tg := r.Targets()
	if len(tg) != 7+len(Routes) {
		t.Fatalf("%d targets, want %d", len(tg), 7+len(Routes))
	}
	for i, want := range []struct {
		name   string
		median float64
		pass   bool
	}{
		{"GET /plants/{id} peak ≥ 0.9 × floor", 0.9, true},
		{"GET /plants?limit=20 peak ≥ 0.9 × floor", 0.8, false},
		{"GET /plants?limit=100 peak ≥ 0.9 × floor", 0.8, false},
		{"DELETE /plants/{id} peak ≥ 0.9 × floor", 0.8, false},
	} {
		got := tg[7+i]
		if got.Issue != 15 || got.Name != want.name || math.Abs(got.Measured.Median-want.median) > 1e-9 || got.Pass() != want.pass {
			t.Errorf("target %d = %+v (pass %v), want %+v", 7+i, got, got.Pass(), want)
		}
	}
	md := markdown(t, r)
	contains(t, "markdown", md,
		"| `GET /plants/{id}`, 50 connections | 900 (850–950) | 1000 | 0.900 (0.850–0.950) | 0.1000 | 0.1000 | 2.00 | 2.00 | – | – |",
		"| 15 | GET /plants/{id} peak ≥ 0.9 × floor | 0.900 (0.850–0.950) × | PASS |",
		"| 15 | DELETE /plants/{id} peak ≥ 0.9 × floor | 0.800 × | FAIL |",
		"the 1.1.0 routes 2s each after 500ms, 10000 plants stored",
	)

	// A bad answer, a missing route and a route without a figure each fail the run.
	r.Rounds[1].Measures[Floor].Routes[RouteDelete].Bad = 2
	r.Rounds[1].Measures[Floor].Routes[RouteDelete].FirstError = "status 404, want 204"
	delete(r.Rounds[2].Measures[Service].Routes, RouteList20)
	r.Rounds[0].Measures[Service].Routes[RouteGet].Peak = 0
	bad := strings.Join(r.Incomplete(), "\n")
	contains(t, "Incomplete", bad,
		"DELETE /plants/{id}: 2 bad answers, 0 requests without an answer (first: status 404, want 204)",
		"GET /plants?limit=20: not measured",
		"GET /plants/{id}: peak or CPU missing",
	)
}

// withSweep adds creates at 10 and 200 connections to sampleRun's rounds:
// the service at 0.95 × the floor at 10; at 0.80, 0.85, 0.90 × at 200, with
// 2.0, 2.4, 1.8 × the floor's peak RSS.
func withSweep(r *Run) *Run {
	r.SweepConns, r.SweepDuration = []int{10, 200}, 3e9
	for i, rd := range r.Rounds {
		for _, v := range RouteVariants {
			m := rd.Measures[v]
			m.Sweep = map[int]*ClosedMeasure{}
			for _, c := range r.SweepConns {
				cm := &ClosedMeasure{Peak: 1000, Requests: 3000, CPUPer1k: 0.08, P50: 1, P99: 4, PeakRSS: 25, Statuses: map[int]int64{200: 3000}}
				if v == Service {
					cm.CPUPer1k, cm.PeakRSS = 0.1, 30
					cm.Peak = 950
					if c == 200 {
						cm.Peak = []float64{800, 850, 900}[i]
						cm.PeakRSS = []float64{50, 60, 45}[i]
					}
				}
				m.Sweep[c] = cm
			}
		}
	}
	return r
}

func TestCreatesByConcurrency(t *testing.T) {
	r := withSweep(sampleRun())
	r.ServiceFlags = []string{"--redis-batch"}
	if got := r.ConcurrencyLevels(); !slices.Equal(got, []int{10, 50, 200}) {
		t.Errorf("ConcurrencyLevels = %v", got)
	}
	if bad := r.Incomplete(); len(bad) != 1 {
		t.Errorf("Incomplete = %v, want only the missing allocations", bad)
	}
	var got []Target
	for _, tg := range r.Targets() {
		if tg.Issue == 15 {
			got = append(got, tg)
		}
	}
	for i, want := range []struct {
		name   string
		median float64
		pass   bool
	}{
		{"creates at 10 connections ≥ 0.9 × floor", 0.95, true},
		{"creates at 50 connections ≥ 1.0 × floor", 0.901, false},
		{"creates at 200 connections ≥ 0.9 × floor", 0.85, false},
		{"service p99 at 25 % of its peak ≤ 1.2 × floor's", 1, true},
		{"peak RSS at 200 connections ≤ 2 × floor's", 2.0, true},
	} {
		if i >= len(got) {
			t.Fatalf("%d targets of issue 15, want at least %d", len(got), i+1)
		}
		if got[i].Name != want.name || math.Abs(got[i].Measured.Median-want.median) > 1e-9 || got[i].Pass() != want.pass {
			t.Errorf("issue 15 target %d = %+v (pass %v), want %+v", i, got[i], got[i].Pass(), want)
		}
	}
	md := markdown(t, r)
	contains(t, "markdown", md,
		"| creates, 10 connections | 950 | 1000 | 0.950 | 0.1000 | 0.0800 | 4.00 | 4.00 | 30.0 | 25.0 |",
		// The 50-connection row is the round's closed loop: the sample's
		// closed-loop p99 and its peak RSS right after it.
		"| creates, 50 connections | 901 (900–902) | 1000 | 0.901 (0.900–0.902) | 0.1000 | 0.1000 | 0.00 | 0.00 | 30.0 | 30.0 |",
		"| creates, 200 connections | 850 (800–900) | 1000 | 0.850 (0.800–0.900) | 0.1000 | 0.0800 | 4.00 | 4.00 | 50.0 (45.0–60.0) | 25.0 |",
		"| 15 | creates at 200 connections ≥ 0.9 × floor | 0.850 (0.800–0.900) × | FAIL |",
		"| 15 | peak RSS at 200 connections ≤ 2 × floor's | 2.000 (1.800–2.400) × | PASS |",
		"round(s), 0s; service flags: `--redis-batch` (`-service-flags`)\n",
		"at 50 connections, 0s per variant after a 0s warm-up, and at 10, 200 connections, 3s each;",
	)
	if md := markdown(t, sampleRun()); strings.Contains(md, "| creates, 10 connections |") || !strings.Contains(md, "; service flags: none\n") {
		t.Error("a run without a sweep shows its rows, or flags it was not given")
	}

	// A failed answer, a missing level and a level without a figure each fail the run.
	r.Rounds[0].Measures[Service].Sweep[200].Bad = 4
	r.Rounds[0].Measures[Service].Sweep[200].Statuses[503] = 4
	r.Rounds[0].Measures[Service].Sweep[200].FirstError = "status 503, want 200"
	delete(r.Rounds[1].Measures[Floor].Sweep, 10)
	r.Rounds[2].Measures[Floor].Sweep[200].PeakRSS = 0
	bad := strings.Join(r.Incomplete(), "\n")
	contains(t, "Incomplete", bad,
		"round 1, service: creates at 200 connections: 4 answers other than 200 (4×503), 0 requests without an answer (first error: status 503, want 200)",
		"round 2, floor: creates at 10 connections: not measured",
		"round 3, floor: creates at 200 connections: peak, CPU or peak RSS missing",
	)
}

// The chart is a PNG; with a sweep it has a second panel, the creates by
// connections; an empty run has none.
func TestChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.png")
	size := func(r *Run) int {
		if err := Chart(r, path); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cfg, err := png.DecodeConfig(f)
		if err != nil {
			t.Fatalf("chart is not a PNG: %v", err)
		}
		return cfg.Width
	}
	one, two := size(sampleRun()), size(withSweep(sampleRun()))
	if two <= one {
		t.Errorf("chart with a sweep is %d px wide, without %d: no second panel", two, one)
	}
	if err := Chart(&Run{}, path); err == nil {
		t.Error("Chart of an empty run: no error")
	}
}

func sampleProfile() *Profile {
	return &Profile{Dir: "bin/profile", Conns: 50, Throughput: 4321, Breakdown: cpuprof.Breakdown{
		Seconds: 7.5, Duration: 5,
		Components: []cpuprof.Share{{Name: "metrics (Prometheus client)"}, {Name: "Redis client (go-redis)", Flat: 0.125, Cum: 0.4}, {Name: "other (no known component on the stack)", Flat: 0.875}},
		Top:        []cpuprof.Share{{Name: "syscall.Syscall6", Flat: 0.3, Cum: 0.31}},
	}}
}

func TestProfileBreakdown(t *testing.T) {
	r := sampleRun()
	if md := markdown(t, r); strings.Contains(md, "CPU profile") {
		t.Error("a run without -profile shows a profile breakdown")
	}
	r.Profile = sampleProfile()
	md := markdown(t, r)
	// Components by flat share, those with no sample left out.
	want := "Service CPU profile after the rounds (`--pprof`, 50 connections, 5.0 s, 7.5 s of CPU sampled at 4321 requests/s;\n" +
		"`go tool pprof bin/profile`), the share of each component:\n\n| component | flat | through it anywhere |\n|---|---|---|\n" +
		"| other (no known component on the stack) | 87.5 % |  |\n| Redis client (go-redis) | 12.5 % | 40.0 % |\n\n" +
		"Top functions: `syscall.Syscall6` 30.0 %.\n"
	if !strings.Contains(md, want) {
		t.Errorf("markdown lacks %q:\n%s", want, md)
	}
}

// contains fails the test for each of wants that text, what the test
// names, lacks.
func contains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}
