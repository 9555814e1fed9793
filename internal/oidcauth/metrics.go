package oidcauth

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/internal/telemetry"
)

// The results of Verify, as counted.
const (
	resultCached      = "cached"
	resultVerified    = "verified"
	resultRejected    = "rejected"
	resultUnavailable = "unavailable"
)

// metrics count verifications and key fetches. The issuer label is a
// configured issuer URL: never a value from a token.
type metrics struct {
	results     map[string]prometheus.Counter
	fetches     *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer, cached func() int) (*metrics, error) {
	results := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "plantstore", Subsystem: "auth", Name: "jwt_verifications_total",
		Help: "JWT bearer credentials checked, by result: cached (verified before, not expired), verified, rejected (401), unavailable (503: the issuer unreachable, no keys cached)."}, []string{"result"})
	fetches := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "plantstore", Subsystem: "auth", Name: "jwt_key_fetches_total",
		Help: "Fetches of a JWT issuer's discovery document and key set, by configured issuer and result (success, failure)."}, []string{"issuer", "result"})
	lastSuccess := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "plantstore", Subsystem: "auth", Name: "jwt_keys_last_success_timestamp_seconds",
		Help: "When a JWT issuer's keys were last fetched, by configured issuer (Unix seconds; absent until the first success)."}, []string{"issuer"})
	entries := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "plantstore", Subsystem: "auth", Name: "jwt_cache_entries",
		Help: "Verified JWTs remembered until they expire (bounded by --auth-jwt-cache-size)."}, func() float64 { return float64(cached()) })
	if err := telemetry.Register(reg, results, fetches, lastSuccess, entries); err != nil {
		return nil, err
	}
	m := &metrics{results: map[string]prometheus.Counter{}, fetches: fetches, lastSuccess: lastSuccess}
	for _, r := range []string{resultCached, resultVerified, resultRejected, resultUnavailable} {
		m.results[r] = results.WithLabelValues(r)
	}
	return m, nil
}

func (m *metrics) result(r string) { m.results[r].Inc() }

// fetched is an issuer's observer of its fetches.
func (m *metrics) fetched(issuer string, err error) {
	if err != nil {
		m.fetches.WithLabelValues(issuer, "failure").Inc()
		return
	}
	m.fetches.WithLabelValues(issuer, "success").Inc()
	m.lastSuccess.WithLabelValues(issuer).Set(float64(time.Now().UnixNano()) / 1e9)
}
