package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/plantstore/plantstore/internal/version"
)

// NewRegistry returns the service's own metrics registry with the Go runtime
// and process collectors and plantstore_build_info; nothing registers in the
// global default registry.
func NewRegistry(info version.Info) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "plantstore", Name: "build_info",
			Help:        "Always 1; the labels say which build is running.",
			ConstLabels: prometheus.Labels{"version": info.Version, "revision": info.Revision, "goversion": info.GoVersion},
		}, func() float64 { return 1 }),
	)
	return reg
}

// DurationBuckets returns the classic histogram buckets of every latency
// metric: from 100µs, where a healthy request lives, to 10s, where a broken
// one does. The SLO thresholds (0.1s, 0.25s) are bucket boundaries.
func DurationBuckets() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}

// LatencyOpts are the options of a latency histogram, classic
// (DurationBuckets) and native alike.
func LatencyOpts(subsystem, name, help string) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{
		Namespace: "plantstore", Subsystem: subsystem, Name: name, Help: help,
		Buckets:                         DurationBuckets(),
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: time.Hour,
	}
}

// Register registers cs on reg, stopping at the first error. (Not through a
// prefixing Registerer: its wrapper hides each collector's type from whoever
// gathers the metrics' descriptions, docs/telemetry.md's test among them.)
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
