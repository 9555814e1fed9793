package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/internal/telemetry"
)

// requestMetrics are the API's RED metrics: a duration histogram by method,
// route template and status code, a request count that adds the client, and
// the requests in flight.
type requestMetrics struct {
	duration *prometheus.HistogramVec
	requests *prometheus.CounterVec
	buckets  []float64
	inFlight prometheus.Gauge
	// series holds each labelled child of duration once looked up
	// (seriesKey → *series): the vector's own lookup hashes and compares
	// the label values on every request.
	series sync.Map
}

// register makes the metrics and registers them on reg.
func (m *requestMetrics) register(reg prometheus.Registerer) error {
	opts := telemetry.LatencyOpts("http", "request_duration_seconds",
		"Time from the request's arrival to the end of its response, by method, route template and status code.")
	m.buckets = opts.Buckets
	m.duration = prometheus.NewHistogramVec(opts, []string{"method", "route", "code"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "plantstore", Subsystem: "http", Name: "requests_total",
		Help: "API requests by method, route template, status code and client: the name= of the token's line in the tokens file, \"unnamed\" without one, \"unauthenticated\" without an accepted token.",
	}, []string{"method", "route", "code", "client"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "plantstore", Subsystem: "http", Name: "requests_in_flight",
		Help: "Requests being served now.",
	})
	return telemetry.Register(reg, m.duration, m.requests, m.inFlight)
}

// series is one child of the duration histogram, with what a request of its
// labels needs beyond the observer.
type series struct {
	obs      prometheus.Observer
	requests prometheus.Counter
	ex       prometheus.ExemplarObserver // nil if obs keeps no exemplars
	// lastExemplar is, per classic bucket (+Inf last), when it last got an
	// exemplar, in Unix nanoseconds.
	lastExemplar []atomic.Int64
	// spanName is the server span's name, "METHOD /route", built once.
	spanName string
}

type seriesKey struct{ method, route, code, client string }

// seriesOf returns the series of the labels, making it on first use. The
// labels are bounded (methodLabel, the route templates and RouteUnmatched,
// the statuses the API sends, the client names of the tokens file), so the
// cache is too.
func (m *requestMetrics) seriesOf(method, route, code, client string) *series {
	key := seriesKey{method, route, code, client}
	if s, ok := m.series.Load(key); ok {
		return s.(*series)
	}
	s := &series{
		obs:          m.duration.WithLabelValues(method, route, code),
		requests:     m.requests.WithLabelValues(method, route, code, client),
		lastExemplar: make([]atomic.Int64, len(m.buckets)+1),
		spanName:     method + " " + route,
	}
	s.ex, _ = s.obs.(prometheus.ExemplarObserver)
	actual, _ := m.series.LoadOrStore(key, s)
	return actual.(*series)
}

// methodLabel bounds the method label: unknown methods count as OTHER.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	default:
		return "OTHER"
	}
}

// statusLabel is strconv.Itoa without an allocation for the statuses the
// API sends.
func statusLabel(code int) string {
	switch code {
	case 200:
		return "200"
	case 400:
		return "400"
	case 401:
		return "401"
	case 404:
		return "404"
	case 405:
		return "405"
	case 409:
		return "409"
	case 413:
		return "413"
	case 415:
		return "415"
	case 403:
		return "403"
	case 429:
		return "429"
	case 500:
		return "500"
	case 503:
		return "503"
	default:
		return strconv.Itoa(code)
	}
}
