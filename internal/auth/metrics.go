package auth

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/internal/telemetry"
)

// Metrics count refused requests and token reloads.
type Metrics struct {
	failures map[string]prometheus.Counter
	// byReason counts the reasons of JWTs, whose series appear only once
	// one happens: without an issuer the metric is 1.1.0's.
	byReason *prometheus.CounterVec
	reloaded prometheus.Counter
	failed   prometheus.Counter
}

// NewMetrics registers the auth metrics on reg. tokens reports the number of
// tokens in force for the plantstore_auth_tokens gauge.
func NewMetrics(reg prometheus.Registerer, tokens func() int) (*Metrics, error) {
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "plantstore", Subsystem: "auth", Name: "failures_total",
		Help: "Requests refused for their credentials, by reason: missing, malformed, rejected, expired, insufficient_scope; for JWTs also no_client (403 40302) and issuer_unavailable (503 50302)."}, []string{"reason"})
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "plantstore", Subsystem: "auth", Name: "token_reloads_total",
		Help: "Changes of the tokens file taken in (success) or refused, keeping the tokens in force (failure)."}, []string{"result"})
	count := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "plantstore", Subsystem: "auth", Name: "tokens", Help: "Tokens accepted now."},
		func() float64 { return float64(tokens()) })
	if err := telemetry.Register(reg, failures, reloads, count); err != nil {
		return nil, err
	}
	m := &Metrics{failures: make(map[string]prometheus.Counter), byReason: failures,
		reloaded: reloads.WithLabelValues("success"), failed: reloads.WithLabelValues("failure")}
	for _, r := range []string{ReasonMissing, ReasonMalformed, ReasonRejected, ReasonExpired, ReasonScope} {
		m.failures[r] = failures.WithLabelValues(r)
	}
	return m, nil
}

// Failure is the middleware's FailureObserver.
func (m *Metrics) Failure(reason string) {
	if c, ok := m.failures[reason]; ok {
		c.Inc()
		return
	}
	if reason == ReasonNoClient || reason == ReasonIssuerUnavailable {
		m.byReason.WithLabelValues(reason).Inc()
	}
}

// Reload is the reloader's ReloadObserver.
func (m *Metrics) Reload(err error) {
	if err != nil {
		m.failed.Inc()
		return
	}
	m.reloaded.Inc()
}
