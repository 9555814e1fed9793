package stats

import (
	"math"
	"testing"
	"time"
)

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestSummariseSorts(t *testing.T) {
	l := Summarise(ms(5, 1, 4, 2, 3))
	if l.N != 5 || l.P50 != 3*time.Millisecond || l.P99 != 5*time.Millisecond || l.Max != 5*time.Millisecond {
		t.Errorf("Summarise = %+v", l)
	}
}

func TestSummary(t *testing.T) {
	s := Summary([]float64{3, 1, 2})
	if s.Median != 2 || s.Min != 1 || s.Max != 3 || s.N != 3 {
		t.Errorf("Summary odd = %+v", s)
	}
	s = Summary([]float64{4, 1, 3, 2})
	if s.Median != 2.5 || s.Min != 1 || s.Max != 4 {
		t.Errorf("Summary even = %+v", s)
	}
	s = Summary([]float64{math.NaN(), 7})
	if s.Median != 7 || s.N != 1 {
		t.Errorf("Summary with NaN = %+v", s)
	}
	if s := Summary(nil); s.Valid() || !math.IsNaN(s.Median) {
		t.Errorf("Summary(nil) = %+v, want invalid NaN", s)
	}
}

func TestRatios(t *testing.T) {
	r := Ratios([]float64{85, 90, 10}, []float64{100, 100, 0})
	if r[0] != 0.85 || r[1] != 0.9 || !math.IsNaN(r[2]) {
		t.Errorf("Ratios = %v", r)
	}
	// The median of paired ratios, not the ratio of medians.
	if s := Summary(r); s.Median != 0.875 || s.Min != 0.85 || s.Max != 0.9 {
		t.Errorf("Summary(ratios) = %+v", s)
	}
	if got := Ratios([]float64{1}, []float64{1, 2}); len(got) != 1 {
		t.Errorf("Ratios of unequal lengths = %v", got)
	}
}

func TestPerThousand(t *testing.T) {
	if got := PerThousand(2, 10000); got != 0.2 {
		t.Errorf("PerThousand(2s, 10000) = %v, want 0.2", got)
	}
	if got := PerThousand(1, 0); !math.IsNaN(got) {
		t.Errorf("PerThousand(1, 0) = %v, want NaN", got)
	}
}
