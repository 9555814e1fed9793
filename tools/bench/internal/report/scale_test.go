package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scaleRun is a run of a base size and one more, every operation measured,
// the larger size's figures the base's times slower.
func scaleRun(slower float64) *ScaleRun {
	r := &ScaleRun{Conns: []int{10, 50}, ForkRate: 1000, PlantBytes: 36, KeyBytes: 40, Window: time.Second}
	for i, plants := range []int64{10_000, 1_000_000} {
		f := 1.0
		if i > 0 {
			f = slower
		}
		s := ScaleSize{Plants: plants, EmptyUsedMemory: 1 << 20, UsedMemory: 1<<20 + plants*140, UsedMemoryRSS: 2<<20 + plants*150,
			Forks: []ForkMeasure{{Kind: ForkRewrite, Ms: 100, COWBytes: 1 << 20, Status: "ok", Requests: 100}, {Kind: ForkSnapshot, Ms: 90, Status: "ok", Requests: 90}}}
		for _, op := range ScaleOps {
			for _, c := range r.Conns {
				s.Ops = append(s.Ops, OpMeasure{Op: op, Conns: c, Rate: 1000 / f, P50: f, P99: 2 * f})
			}
		}
		r.Sizes = append(r.Sizes, s)
	}
	return r
}

// pairs makes a round of each of ops per factor: the size's figure as in
// ops, the base phase beside it that many times faster.
func pairs(ops []OpMeasure, factors ...float64) []Pair {
	var out []Pair
	for _, f := range factors {
		for _, m := range ops {
			b := m
			b.Rate, b.P50, b.P99 = m.Rate*f, m.P50/f, m.P99/f
			out = append(out, Pair{Size: m, Base: b})
		}
	}
	return out
}

func TestScaleGoalsAndFailures(t *testing.T) {
	for _, tc := range []struct {
		name       string
		run        func() *ScaleRun
		pass       []bool // the goals' verdicts, in order
		incomplete string // in Incomplete's lines; "" for none
	}{
		{"flat", func() *ScaleRun { return scaleRun(1.1) }, []bool{true, true, true, true}, ""},
		{"slower", func() *ScaleRun { return scaleRun(1.3) }, []bool{false, false, true, true}, ""},
		{"memory", func() *ScaleRun {
			r := scaleRun(1)
			r.Sizes[1].UsedMemory += 20 * r.Sizes[1].Plants
			return r
		}, []bool{true, true, false, true}, ""},
		{"fork failures", func() *ScaleRun {
			r := scaleRun(1)
			r.Sizes[1].Forks[0].Failed = 3
			return r
		}, []bool{true, true, true, false}, "3 of 100 creates failed"},
		{"missing figure", func() *ScaleRun {
			r := scaleRun(1)
			r.Sizes[1].Ops = r.Sizes[1].Ops[1:]
			return r
		}, []bool{true, true, true, true}, "9 operation figures, want 10"},
		{"events lost", func() *ScaleRun {
			r := scaleRun(1)
			r.Outbox = &OutboxMeasure{Created: 10, Received: 9, Lost: 1, Drained: true}
			return r
		}, []bool{true, true, true, true}, "1 events lost"},
		// Paired rounds: each ratio is the median of the rounds' ratios to
		// the phases beside them, whatever the base column measured alone.
		{"paired, flat beside a slow base column", func() *ScaleRun {
			r := scaleRun(1.3)
			r.Sizes[1].Pairs = pairs(r.Sizes[1].Ops, 0.9, 1, 1.15)
			return r
		}, []bool{true, true, true, true}, ""},
		{"paired, slower in most rounds", func() *ScaleRun {
			r := scaleRun(1)
			r.Sizes[1].Pairs = pairs(r.Sizes[1].Ops, 1.3, 1, 1.25)
			return r
		}, []bool{false, false, true, true}, ""},
		{"not drained", func() *ScaleRun {
			r := scaleRun(1)
			r.Outbox = &OutboxMeasure{Created: 10, Received: 10}
			return r
		}, []bool{true, true, true, true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run()
			goals := r.Goals()
			if len(goals) != len(tc.pass) {
				t.Fatalf("%d goals, want %d", len(goals), len(tc.pass))
			}
			for i, g := range goals {
				if g.Pass != tc.pass[i] {
					t.Errorf("goal %q: pass %v (%s), want %v", g.Name, g.Pass, g.Measured, tc.pass[i])
				}
			}
			got := strings.Join(r.Incomplete(), "\n")
			if tc.incomplete == "" && got != "" || !strings.Contains(got, tc.incomplete) {
				t.Errorf("Incomplete() = %q, want %q", got, tc.incomplete)
			}
		})
	}
}

// A failed request is a failure of a -short run and reported by a full
// one; a missing figure or a lost event fails either.
func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name             string
		short            bool
		change           func(r *ScaleRun)
		failures, errors int
	}{
		{"clean", false, func(*ScaleRun) {}, 0, 0},
		{"failed requests", false, func(r *ScaleRun) { r.Sizes[0].Ops[2].Failed = 2 }, 0, 1},
		{"failed requests, short", true, func(r *ScaleRun) { r.Sizes[0].Ops[2].Failed = 2 }, 1, 0},
		{"failed creates in the outage", false, func(r *ScaleRun) {
			r.Outbox = &OutboxMeasure{Created: 10, Received: 10, Failed: 3, Drained: true}
		}, 0, 1},
		{"failed requests beside a size", false, func(r *ScaleRun) {
			r.Sizes[1].Pairs = pairs(r.Sizes[1].Ops, 1)
			r.Sizes[1].Pairs[3].Base.Failed = 1
		}, 0, 1},
		{"an event lost", false, func(r *ScaleRun) { r.Outbox = &OutboxMeasure{Created: 10, Received: 9, Lost: 1, Drained: true} }, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := scaleRun(1)
			r.Short = tc.short
			tc.change(r)
			r.Judge("chart")
			if len(r.Failures) != tc.failures+1 || r.Failures[0] != "chart" || len(r.Errors) != tc.errors {
				t.Errorf("Judge: failures %q, errors %q; want %d and %d", r.Failures, r.Errors, tc.failures, tc.errors)
			}
		})
	}
}

// The sizing block replaces only what is between its markers, once each;
// a document without them is refused.
func TestMarkdownSizing(t *testing.T) {
	r := scaleRun(1.1)
	r.Migration = &MigrationMeasure{Plants: 1000, Seconds: 2, Output: "moved"}
	doc := []byte("# t\n\nbefore\n" + SizingBegin + "\nold\n" + SizingEnd + "\nafter\n")
	md, err := SizingSection.Replace(doc, Sizing(r))
	if err != nil {
		t.Fatal(err)
	}
	block, err := SizingSection.Of(md)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(block, Sizing(r)) || !bytes.HasPrefix(md, []byte("# t\n\nbefore\n")) || !bytes.HasSuffix(md, []byte(SizingEnd+"\nafter\n")) {
		t.Errorf("Replace:\n%s", md)
	}
	contains(t, "the block", string(block), "| plants | 10k | 1M |", "1000 / 1.00 / 2.00", "1.10", "of 1k 1.0.0 plants: 2.0 s, 500 plants/s")
	for _, bad := range []string{"no markers", SizingBegin + SizingBegin + SizingEnd, SizingEnd + SizingBegin} {
		if _, err := SizingSection.Replace([]byte(bad), Sizing(r)); err == nil {
			t.Errorf("Replace(%q): no error", bad)
		}
	}
	if md, err := SizingSection.Replace(nil, Sizing(r)); err != nil || !bytes.Contains(md, Sizing(r)) {
		t.Errorf("a new document: %v", err)
	}
}

func TestScaleRunRoundTripAndChart(t *testing.T) {
	r := scaleRun(1.1)
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode[ScaleRun](b)
	if err != nil || !bytes.Equal(Sizing(back), Sizing(r)) {
		t.Fatalf("decoded run renders differently (%v)", err)
	}
	if _, err := Decode[ScaleRun]([]byte(`{"Unknown": 1}`)); err == nil {
		t.Error("an unknown field decoded")
	}
	png := filepath.Join(t.TempDir(), "scale.png")
	if err := ScaleChart(r, png); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("chart: %v", err)
	}
	if err := ScaleChart(&ScaleRun{}, png); err == nil {
		t.Error("a chart of no size")
	}
}

func TestPlantsLabel(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 10_000: "10k", 292_500: "292.5k", 1_000_000: "1M", 2_500_000: "2.5M", 10_000_000: "10M"} {
		if got := plantsLabel(n); got != want {
			t.Errorf("plantsLabel(%d) = %s, want %s", n, got, want)
		}
	}
}
