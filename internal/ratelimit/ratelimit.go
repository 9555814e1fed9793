// Package ratelimit holds each API client to its rate (contract section 10):
// a GCRA budget per client, kept in Redis when the store is Redis, so that
// it holds across every replica, and in the process for the embedded store.
// Over the limit a request answers 429 42901 with Retry-After and the
// RateLimit-Policy and RateLimit fields of the IETF HTTPAPI draft
// (draft-ietf-httpapi-ratelimit-headers); a limiter that cannot reach its
// store lets the request through (fail open), counted and logged.
package ratelimit

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/auth"
)

// Decision is a store's answer for one request of a budget.
type Decision struct {
	Allowed bool
	// Remaining is how many more requests the budget admits at once now.
	Remaining int
	// RetryAfter is, when not allowed, how long until one request is.
	RetryAfter time.Duration
	// ResetAfter is how long until the budget is full again.
	ResetAfter time.Duration
}

// Store keeps the budgets: Allow takes one request from the budget key,
// limited to r, and tells whether it fits.
type Store interface {
	Allow(ctx context.Context, key string, r auth.Rate) (Decision, error)
}

// Observer is told of each request the limiter let through without a
// decision, because its store failed; it may be nil.
type Observer func(err error)

// Limiter applies each client's rate, or the default, to the requests of
// authenticated clients.
type Limiter struct {
	store    Store
	fallback auth.Rate
	timeout  time.Duration
	log      *zap.Logger
	observe  Observer
	// failOpen logging: at most one line per failOpenLogEvery, with the
	// count of requests let through since the last one.
	lastLog    atomic.Int64
	suppressed atomic.Int64
}

// failOpenLogEvery bounds the fail-open log lines: one per interval,
// however many requests an outage lets through.
const failOpenLogEvery = 10 * time.Second

// New returns a limiter over store. fallback is the rate of a client
// without one (zero: no limit); timeout bounds each store call, past which
// the request goes through unlimited.
func New(store Store, fallback auth.Rate, timeout time.Duration, log *zap.Logger, observe Observer) *Limiter {
	if observe == nil {
		observe = func(error) {}
	}
	return &Limiter{store: store, fallback: fallback, timeout: timeout, log: log, observe: observe}
}

// Policy is the name of the quota policy in the RateLimit fields.
const Policy = "client"

// Middleware limits the requests of the client in the context (put there by
// auth.Middleware, which must come first). A request without a client, or
// whose client has no rate and there is no default, passes untouched: no
// store call, no header, exactly as in 1.0.0.
func (l *Limiter) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := auth.ClientFrom(r.Context())
		if c == nil {
			next.ServeHTTP(w, r)
			return
		}
		rate := c.Rate
		if rate.IsZero() {
			rate = l.fallback
		}
		if rate.IsZero() {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), l.timeout)
		d, err := l.store.Allow(ctx, c.Key(), rate)
		cancel()
		if err != nil {
			l.failOpen(c, err)
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h["Ratelimit-Policy"] = []string{policyField(rate)}
		if !d.Allowed {
			retry := max(seconds(d.RetryAfter), 1)
			h["Ratelimit"] = []string{limitField(0, retry)}
			h["Retry-After"] = []string{strconv.FormatInt(retry, 10)}
			apierror.Write(w, apierror.New(apierror.RateLimited,
				"rate limit of "+strconv.Itoa(rate.Count)+" requests per "+periodName(rate.Period)+" exhausted; retry after Retry-After seconds"))
			return
		}
		h["Ratelimit"] = []string{limitField(d.Remaining, seconds(d.ResetAfter))}
		next.ServeHTTP(w, r)
	})
}

// failOpen counts a request let through for want of a decision and logs,
// at most once per failOpenLogEvery, how many were.
func (l *Limiter) failOpen(c *auth.Client, err error) {
	l.observe(err)
	n := l.suppressed.Add(1)
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if now-last < int64(failOpenLogEvery) || !l.lastLog.CompareAndSwap(last, now) {
		return
	}
	l.suppressed.Add(-n)
	l.log.Warn("rate limiter store unreachable; serving requests without a limit (fail open)",
		zap.String("client", c.Name), zap.Int64("requests_since_last_report", n), zap.Error(err))
}

// policyField is the RateLimit-Policy field of rate: its quota q in a
// window of w seconds.
func policyField(r auth.Rate) string {
	b := make([]byte, 0, 48)
	b = append(b, `"`+Policy+`";q=`...)
	b = strconv.AppendInt(b, int64(r.Count), 10)
	b = append(b, ";w="...)
	b = strconv.AppendInt(b, int64(r.Period/time.Second), 10)
	return string(b)
}

// limitField is the RateLimit field: r requests available, the budget full
// again (or, throttled, one request available) in t seconds.
func limitField(remaining int, t int64) string {
	b := make([]byte, 0, 40)
	b = append(b, `"`+Policy+`";r=`...)
	b = strconv.AppendInt(b, int64(remaining), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, t, 10)
	return string(b)
}

// seconds rounds d up to whole seconds, at least 1 when d > 0: a client
// waiting that long is never early.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}

func periodName(p time.Duration) string {
	switch p {
	case time.Second:
		return "second"
	case time.Minute:
		return "minute"
	default:
		return "hour"
	}
}
