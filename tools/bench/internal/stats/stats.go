// Package stats holds the pure arithmetic of the harness: percentiles of
// latency samples, medians and spreads over rounds, and ratios.
package stats

import (
	"math"
	"slices"
	"time"

	"github.com/plantstore/plantstore/internal/servicetest"
)

// Latencies summarises one phase's latency samples.
type Latencies struct {
	N                   int
	P50, P99, P999, Max time.Duration
}

// Summarise sorts samples in place (so that each percentile reads them as
// they are) and returns their percentiles.
func Summarise(samples []time.Duration) Latencies {
	slices.Sort(samples)
	return Latencies{
		N:    len(samples),
		P50:  servicetest.Percentile(samples, 50),
		P99:  servicetest.Percentile(samples, 99),
		P999: servicetest.Percentile(samples, 99.9),
		Max:  servicetest.Percentile(samples, 100),
	}
}

// Spread is the median of a set of per-round figures and its range.
type Spread struct {
	Median, Min, Max float64
	N                int
}

// Valid reports whether the spread was computed from at least one finite value.
func (s Spread) Valid() bool { return s.N > 0 }

// Summary returns the median, minimum and maximum of the finite values in xs
// (NaN and infinities are left out). The median of an even count is the mean
// of the two middle values.
func Summary(xs []float64) Spread {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Spread{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return Spread{Median: med, Min: v[0], Max: v[n-1], N: n}
}

// Ratio is a/b, or NaN when either is not a finite number or b is zero.
func Ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return math.NaN()
	}
	return a / b
}

// Ratios returns a[i]/b[i] for each round i present in both: paired ratios,
// so that what drifted between rounds cancels within each pair.
func Ratios(a, b []float64) []float64 {
	n := min(len(a), len(b))
	out := make([]float64, n)
	for i := range n {
		out[i] = Ratio(a[i], b[i])
	}
	return out
}

// PerThousand returns the CPU seconds spent per 1,000 requests, or NaN when
// no request completed.
func PerThousand(cpuSeconds float64, requests int64) float64 {
	if requests <= 0 {
		return math.NaN()
	}
	return cpuSeconds / float64(requests) * 1000
}

// Millis converts a duration to fractional milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
