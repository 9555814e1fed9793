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

func TestPercentileNearestRank(t *testing.T) {
	// 1..100 ms: the p-th percentile by nearest rank is p ms.
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 50 * time.Millisecond},
		{99, 99 * time.Millisecond},
		{99.9, 100 * time.Millisecond},
		{100, 100 * time.Millisecond},
		{1, 1 * time.Millisecond},
		{0, 1 * time.Millisecond},
	} {
		if got := Percentile(s, c.p); got != c.want {
			t.Errorf("Percentile(1..100ms, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile(nil, 99); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
	// One slow request in 1,000 is the p99.9 but not the p99.
	s = make([]time.Duration, 1000)
	for i := range s {
		s[i] = time.Millisecond
	}
	s[999] = time.Second
	if got := Percentile(s, 99); got != time.Millisecond {
		t.Errorf("p99 = %v, want 1ms", got)
	}
	if got := Percentile(s, 99.9); got != time.Millisecond {
		t.Errorf("p99.9 of 1000 samples with one outlier = %v, want 1ms (rank 999)", got)
	}
	if got := Percentile(s, 99.95); got != time.Second {
		t.Errorf("p99.95 = %v, want 1s", got)
	}
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
