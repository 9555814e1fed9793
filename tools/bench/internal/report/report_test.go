package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func TestChangesKeptVerbatim(t *testing.T) {
	if got := Changes(nil); got != defaultChanges {
		t.Errorf("Changes(nil) = %q", got)
	}
	mine := "| token digests once | service peak | 0.71 × | 0.88 × |\n\nSome  *notes*  kept as they are.\n"
	r := sampleRun()
	prev := []byte("# Old\n\n" + ChangeBegin + "\n" + mine + ChangeEnd + "\ntrailing junk\n")
	md := Markdown(r, prev)
	if got := Changes(md); got != mine {
		t.Errorf("Changes after regeneration = %q, want %q", got, mine)
	}
	// And again: regeneration is a fixed point for the section.
	if got := Changes(Markdown(r, md)); got != mine {
		t.Errorf("second regeneration changed the section: %q", got)
	}
	if strings.Contains(string(md), "trailing junk") {
		t.Error("text outside the markers survived")
	}
}

func sampleRun() *Run {
	r := &Run{Fractions: []float64{0.25, 0.5, 0.75}, Conns: 50, OTLPExports: map[string]int64{}, OTLPBytes: map[string]int64{}, AccessLines: map[string]int64{}}
	for i := range 3 {
		k := float64(i)
		rd := Round{Rates: []float64{250, 500, 750}, Measures: map[string]*Measure{}}
		for v, peak := range map[string]float64{Service: 900 + k, AllSampled: 750, Floor: 1000} {
			m := &Measure{ReadyMs: 50, IdleRSS: 20, PeakRSS: 40, Peak: peak, CPUPer1k: 0.1, Statuses: map[int]int64{200: 10}}
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
	r.Rounds[0].Measures[Service].Non200 = 3
	r.Rounds[0].Measures[Service].Statuses[401] = 3
	if bad := r.Incomplete(); len(bad) != 2 || !strings.Contains(bad[0], "3×401") {
		t.Errorf("Incomplete with failures = %v", bad)
	}
	md := string(Markdown(r, nil))
	for _, want := range []string{"| service peak ≥ 0.85 × floor | 0.901 (0.900–0.902) × | PASS |", "| service | 901 (900–902) | 0.901 (0.900–0.902) |", "## Changes and their effect"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}

func TestChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.png")
	if err := Chart(sampleRun(), path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("chart is not a PNG (%v)", err)
	}
	if err := Chart(&Run{}, path); err == nil {
		t.Error("Chart of an empty run: no error")
	}
}
