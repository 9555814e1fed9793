package store

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/telemetry"
)

// Store operation outcomes, as labelled on the duration histogram. A conflict
// or a missing id is an answer from the store, so it counts as ok. unreplicated: the write
// reached the master but too few replicas acknowledged it in time
// (ErrNotReplicated, with --redis-min-replica-acks only). full: the store
// refused to grow (plant.ErrFull), a create answered 507.
const (
	outcomeOK           = "ok"
	outcomeUnavailable  = "unavailable"
	outcomeUnreplicated = "unreplicated"
	outcomeFull         = "full"
	outcomeError        = "error"
)

// Instrumented times every operation of a Backend by operation and outcome.
type Instrumented struct {
	next                         Backend
	create, get, del, list, ping map[string]prometheus.Observer
}

// Instrument registers plantstore_store_operation_duration_seconds on reg and
// returns b observed by it.
func Instrument(b Backend, reg prometheus.Registerer) (*Instrumented, error) {
	vec := prometheus.NewHistogramVec(telemetry.LatencyOpts("store", "operation_duration_seconds",
		"Time of store operations, by operation (create, get, delete, list, ping) and outcome (ok, unavailable, unreplicated, full, error)."),
		[]string{"operation", "outcome"})
	if err := reg.Register(vec); err != nil {
		return nil, err
	}
	curry := func(op string) map[string]prometheus.Observer {
		m := make(map[string]prometheus.Observer)
		for _, o := range []string{outcomeOK, outcomeUnavailable, outcomeUnreplicated, outcomeFull, outcomeError} {
			m[o] = vec.WithLabelValues(op, o)
		}
		return m
	}
	return &Instrumented{next: b, create: curry("create"), get: curry("get"), del: curry("delete"),
		list: curry("list"), ping: curry("ping")}, nil
}

// Create implements plant.Repository.
func (i *Instrumented) Create(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error) {
	start := time.Now()
	stored, outcome, err := i.next.Create(ctx, p)
	i.create[outcomeOf(err)].Observe(time.Since(start).Seconds())
	return stored, outcome, err
}

// Get implements plant.Repository.
func (i *Instrumented) Get(ctx context.Context, id int64) (plant.Plant, error) {
	start := time.Now()
	p, err := i.next.Get(ctx, id)
	i.get[outcomeOf(err)].Observe(time.Since(start).Seconds())
	return p, err
}

// Delete implements plant.Repository.
func (i *Instrumented) Delete(ctx context.Context, id int64) error {
	start := time.Now()
	err := i.next.Delete(ctx, id)
	i.del[outcomeOf(err)].Observe(time.Since(start).Seconds())
	return err
}

// List implements plant.Repository.
func (i *Instrumented) List(ctx context.Context, after *int64, limit int) (plant.Page, error) {
	start := time.Now()
	page, err := i.next.List(ctx, after, limit)
	i.list[outcomeOf(err)].Observe(time.Since(start).Seconds())
	return page, err
}

// Ping implements Backend.
func (i *Instrumented) Ping(ctx context.Context) error {
	start := time.Now()
	err := i.next.Ping(ctx)
	i.ping[outcomeOf(err)].Observe(time.Since(start).Seconds())
	return err
}

func outcomeOf(err error) string {
	switch {
	case err == nil, errors.Is(err, plant.ErrConflict), errors.Is(err, plant.ErrNotFound):
		return outcomeOK
	case errors.Is(err, ErrNotReplicated):
		return outcomeUnreplicated
	case errors.Is(err, plant.ErrUnavailable):
		return outcomeUnavailable
	case errors.Is(err, plant.ErrFull):
		return outcomeFull
	default:
		return outcomeError
	}
}

// PoolCollector exports a go-redis connection pool's statistics.
type PoolCollector struct {
	stats                         func() *redis.PoolStats
	hits, misses, timeouts, stale *prometheus.Desc
	totalConns, idleConns         *prometheus.Desc
}

// NewPoolCollector returns a collector of the pool behind stats (for a
// Cluster, the sum over its nodes, as go-redis reports it).
func NewPoolCollector(stats func() *redis.PoolStats) *PoolCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("plantstore_redis_pool_"+name, help, nil, nil)
	}
	return &PoolCollector{
		stats:      stats,
		hits:       desc("hits_total", "Times a free connection was found in the pool."),
		misses:     desc("misses_total", "Times no free connection was in the pool and one was dialled or awaited."),
		timeouts:   desc("timeouts_total", "Times waiting for a pool connection timed out."),
		stale:      desc("stale_connections_total", "Stale connections removed from the pool."),
		totalConns: desc("total_connections", "Connections in the pool."),
		idleConns:  desc("idle_connections", "Idle connections in the pool."),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hits, c.misses, c.timeouts, c.stale, c.totalConns, c.idleConns} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(s.Hits))
	ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(s.Misses))
	ch <- prometheus.MustNewConstMetric(c.timeouts, prometheus.CounterValue, float64(s.Timeouts))
	ch <- prometheus.MustNewConstMetric(c.stale, prometheus.CounterValue, float64(s.StaleConns))
	ch <- prometheus.MustNewConstMetric(c.totalConns, prometheus.GaugeValue, float64(s.TotalConns))
	ch <- prometheus.MustNewConstMetric(c.idleConns, prometheus.GaugeValue, float64(s.IdleConns))
}
