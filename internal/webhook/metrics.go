package webhook

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/telemetry"
)

// Delivery outcomes, as labelled on plantstore_webhook_deliveries_total.
const (
	OutcomeDelivered    = "delivered"     // a 2xx
	OutcomeRetry        = "retry"         // failed, scheduled again with backoff
	OutcomeDeadLettered = "dead_lettered" // failed its last attempt
	OutcomeUnsubscribed = "unsubscribed"  // its subscriber left the file; dropped
)

// Metrics are the webhook metrics. The subscriber label is a subscriber's
// Name (host[:port] from the file, bounded by it), never its secret, path,
// query or credentials.
type Metrics struct {
	deliveries *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	backlog    *prometheus.GaugeVec
	oldest     prometheus.Gauge
	dead       prometheus.Gauge
	subs       prometheus.Gauge
	reloads    *prometheus.CounterVec
}

// NewMetrics registers the webhook metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plantstore", Subsystem: "webhook", Name: "deliveries_total",
			Help: "Delivery attempts of events to subscribers, by subscriber (host[:port]) and outcome (delivered, retry, dead_lettered, unsubscribed).",
		}, []string{"subscriber", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "plantstore", Subsystem: "webhook", Name: "delivery_duration_seconds",
			Help:    "Time of one delivery attempt, from connect to the answer's end, by subscriber.",
			Buckets: telemetry.DurationBuckets(),
		}, []string{"subscriber"}),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "plantstore", Subsystem: "webhook", Name: "backlog",
			Help: "Undelivered work in the outbox, by queue: events (recorded, not yet fanned out) and deliveries (one per event and subscriber, due or being delivered). The same on every replica: aggregate with max.",
		}, []string{"queue"}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "plantstore", Subsystem: "webhook", Name: "oldest_event_age_seconds",
			Help: "Age of the oldest event still waiting for a delivery (0 when none). The same on every replica: aggregate with max.",
		}),
		dead: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "plantstore", Subsystem: "webhook", Name: "dead_letters",
			Help: "Deliveries given up after their last attempt, kept for an operator to replay. The same on every replica: aggregate with max.",
		}),
		subs: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "plantstore", Subsystem: "webhook", Name: "subscribers",
			Help: "Subscribers in force (events are recorded only while there is at least one).",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plantstore", Subsystem: "webhook", Name: "subscribers_reloads_total",
			Help: "Rereads of a changed subscribers file, by result (success, failure).",
		}, []string{"result"}),
	}
	if err := telemetry.Register(reg, m.deliveries, m.duration, m.backlog, m.oldest, m.dead, m.subs, m.reloads); err != nil {
		return nil, err
	}
	// Both queues exist (at 0) before the first reading, and without
	// webhooks, so that dashboards and alerts see them.
	m.backlog.WithLabelValues("events")
	m.backlog.WithLabelValues("deliveries")
	return m, nil
}

func (m *Metrics) delivered(sub, outcome string) { m.deliveries.WithLabelValues(sub, outcome).Inc() }

func (m *Metrics) observe(sub string, d time.Duration) {
	m.duration.WithLabelValues(sub).Observe(d.Seconds())
}

func (m *Metrics) stats(s store.OutboxStats, now time.Time) {
	m.backlog.WithLabelValues("events").Set(float64(s.Events))
	m.backlog.WithLabelValues("deliveries").Set(float64(s.Tasks))
	m.dead.Set(float64(s.DeadLetters))
	age := 0.0
	if !s.Oldest.IsZero() {
		age = max(0, now.Sub(s.Oldest).Seconds())
	}
	m.oldest.Set(age)
}

func (m *Metrics) subscribers(n int) { m.subs.Set(float64(n)) }

func (m *Metrics) reload(err error) {
	if err != nil {
		m.reloads.WithLabelValues("failure").Inc()
		return
	}
	m.reloads.WithLabelValues("success").Inc()
}
