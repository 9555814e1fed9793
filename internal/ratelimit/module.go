package ratelimit

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/telemetry"
)

// Options configure the limiter.
type Options struct {
	// Default is the rate of a client whose line has no rate=; zero for
	// none, the 1.0.0 behaviour.
	Default auth.Rate
	// Timeout bounds each decision; past it the request is served
	// unlimited (fail open).
	Timeout time.Duration
	// RedisAddrs, when set, keep the budgets on this Redis instead of the
	// store's (with the store's credentials and TLS settings).
	RedisAddrs []string
}

// Limit is the limiting middleware: it holds each authenticated client to
// its rate (the API router's last guard).
type Limit func(http.Handler) http.Handler

// Result is what the ratelimit module provides.
type Result struct {
	fx.Out

	Limit Limit
}

// NewModule builds the limiter: on Redis when the store is Redis (or
// o.RedisAddrs are set), in the process otherwise. Its Redis client is its
// own, with no retries and o.Timeout bounding every I/O and the decision, so that a slow or
// unreachable Redis costs a request at most the timeout.
func NewModule(lc fx.Lifecycle, o Options, ro store.RedisOptions, log *zap.Logger, reg prometheus.Registerer, tracing *telemetry.Tracing) (Result, error) {
	log = log.Named("ratelimit")
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "plantstore", Subsystem: "ratelimit", Name: "fail_open_total",
		Help: "Requests served without a rate-limit decision because the limiter's store failed or was too slow (fail open).",
	})
	if err := reg.Register(failures); err != nil {
		return Result{}, err
	}
	var st Store
	if len(o.RedisAddrs) > 0 {
		ro.Addrs = o.RedisAddrs
	}
	if len(ro.Addrs) == 0 {
		st = NewMemory()
	} else {
		// No retry: a retry's backoff would hold every request of an
		// outage (docs/performance.md, rate limiter); after a Redis restart
		// each dead pooled connection fails one decision open, and the next
		// takes a fresh one.
		ro.MaxRetries = -1
		ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = o.Timeout, o.Timeout, o.Timeout
		client, err := store.NewRedisClient(ro)
		if err != nil {
			return Result{}, fmt.Errorf("rate limiter redis client: %w", err)
		}
		lc.Append(fx.StopHook(client.Close))
		if tracing.Exporting {
			if err := store.TraceCommands(client, tracing.Provider); err != nil {
				return Result{}, err
			}
		}
		st = NewRedis(client, ro.KeyPrefix)
	}
	log.Info("rate limits", zap.Bool("redis", len(ro.Addrs) > 0), zap.Stringer("default", o.Default), zap.Duration("timeout", o.Timeout))
	l := New(st, o.Default, o.Timeout, log, func(error) { failures.Inc() })
	return Result{Limit: l.Middleware}, nil
}

// Module provides the rate-limiting middleware.
var Module = fx.Module("ratelimit", fx.Provide(NewModule))
