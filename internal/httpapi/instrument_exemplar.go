package httpapi

import (
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// exemplarInterval is the least time between two exemplars of one bucket of
// one series. Prometheus keeps one exemplar per bucket and scrapes
// every 15 to 60 seconds, so fresher exemplars than this are never seen,
// while each costs the trace id's string, a label map and a protobuf
// message.
const exemplarInterval = 100 * time.Millisecond

// observe records a request's duration. A sampled request's trace id goes
// with it as an exemplar unless its bucket got one within the last
// exemplarInterval: per bucket, so that a rare slow request still leaves its
// trace next to its bucket however many fast ones are sampled.
func (m *requestMetrics) observe(s *series, end time.Time, elapsed time.Duration, sc trace.SpanContext) {
	v := elapsed.Seconds()
	if s.ex != nil && sc.IsSampled() {
		last := &s.lastExemplar[sort.SearchFloat64s(m.buckets, v)] // the first bucket whose le ≥ v
		now, prev := end.UnixNano(), last.Load()                   // the request's end: no second clock read
		if now-prev >= int64(exemplarInterval) && last.CompareAndSwap(prev, now) {
			s.ex.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	s.obs.Observe(v)
}
