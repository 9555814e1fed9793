package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// retryPolicy is when and how long PlantStore waits between attempts; the
// clock, sleep and jitter are fields so that tests need no real waiting.
type retryPolicy struct {
	attempts      int
	base, ceiling time.Duration
	// spread is the backoff's randomization factor: equalJitter, or 0 in
	// tests that want exact waits.
	spread        float64
	maxRetryAfter time.Duration
	sleep         func(ctx context.Context, d time.Duration) error
	jitter        func() float64 // in [0, 1), added to a Retry-After
	now           func() time.Time
}

// equalJitter makes backoff's waits "equal jitter": the nth wait is
// min(ceiling, base·2^(n-1)) jittered down by up to half (never zero,
// never above the cap). backoff randomizes symmetrically about its
// interval, so the interval is 3/4 of that wait and varies by a third.
const equalJitter = 1.0 / 3

// schedule is the backoff of one request's waits without a Retry-After.
func (p retryPolicy) schedule() backoff.ExponentialBackOff {
	return backoff.ExponentialBackOff{
		InitialInterval:     p.base - p.base/4,
		RandomizationFactor: p.spread,
		Multiplier:          2,
		MaxInterval:         p.ceiling - p.ceiling/4,
	}
}

// sleepContext waits d, or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// retryable reports whether req may be sent again: see Retries above.
func (c *PlantStore) retryable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false // the body cannot be replayed
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
		return true
	case http.MethodPost:
		return path.Clean("/"+strings.TrimPrefix(req.URL.Path, c.base.Path)) == "/plants"
	}
	return false
}

// send sends req with the token, retrying as the policy says. It returns
// the last answer (whose body the caller closes), or the last error; a
// context's end is returned as the context's error. uncertain reports that
// an earlier attempt failed in a way that leaves its effect unknown (a 503,
// or a connection error once the request may have been written): the
// answer may be to a repeat of a request that took effect.
func (c *PlantStore) send(req *http.Request) (resp *http.Response, uncertain bool, err error) {
	ctx := req.Context()
	if !c.sameOrigin(req.URL) {
		return nil, false, fmt.Errorf("refusing to send the token to %s://%s: not the client's base URL", req.URL.Scheme, req.URL.Host)
	}
	retryable := c.retryable(req)
	// The loop is not backoff.Retry's: that returns an error, not the last
	// 503 for the caller to read, would start a wait past the context's
	// deadline, and restarts its backoff after a Retry-After (here the nth
	// attempt's backoff is the same whatever waits came before).
	schedule := c.retry.schedule()
	for attempt := 1; ; attempt++ {
		r := req.Clone(ctx)
		if attempt > 1 && req.GetBody != nil {
			if r.Body, err = req.GetBody(); err != nil {
				return nil, uncertain, fmt.Errorf("replaying the request body: %w", err)
			}
		}
		r.Header.Set("Authorization", "Bearer "+c.token)
		resp, err = c.http.Do(r)

		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			if resp != nil {
				drain(resp.Body)
			}
			return nil, uncertain, context.Cause(ctx)
		case err != nil:
			if !retryable || attempt >= c.retry.attempts || !transient(err) {
				return nil, uncertain, attemptsErr(attempt, err)
			}
			uncertain = uncertain || !refused(err)
			wait = schedule.NextBackOff()
		case resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusTooManyRequests:
			if !retryable || attempt >= c.retry.attempts {
				return resp, uncertain, nil
			}
			if d, ok := retryAfter(resp.Header, c.retry.now()); ok {
				if d > c.retry.maxRetryAfter {
					return resp, uncertain, nil
				}
				// Honour the service's wait, plus a little jitter so that
				// the clients it turned away do not return in step.
				wait = d + time.Duration(c.retry.jitter()*float64(c.retry.base))
				schedule.NextBackOff() // a later backoff wait is still the nth attempt's
			} else if resp.StatusCode == http.StatusTooManyRequests {
				return resp, uncertain, nil // no say when: the caller decides
			} else {
				wait = schedule.NextBackOff()
			}
			drain(resp.Body)
			// A 503 may come from a store that timed out after writing; a
			// 429 is answered before the request is served.
			uncertain = uncertain || resp.StatusCode == http.StatusServiceUnavailable
		default:
			return resp, uncertain, nil
		}
		if deadline, ok := ctx.Deadline(); ok && c.retry.now().Add(wait).After(deadline) {
			return nil, uncertain, fmt.Errorf("%w (after %d attempts; the next wait, %s, ends after the context's deadline)",
				context.DeadlineExceeded, attempt, wait)
		}
		if err := c.retry.sleep(ctx, wait); err != nil {
			return nil, uncertain, err
		}
	}
}

func attemptsErr(n int, err error) error {
	if n == 1 {
		return err
	}
	return fmt.Errorf("%w (after %d attempts)", err, n)
}

// errHTTP2ConnectionLost is how net/http's HTTP/2 transport fails the
// requests of a connection its health check found dead (NewTransport), an
// error it does not export: the peer vanished, and a new connection may
// reach another.
const errHTTP2ConnectionLost = "http2: client connection lost"

// transient reports whether a transport error is worth a retry: the
// connection was refused, reset, cut or found dead, or timed out. A bad URL, a TLS
// failure or a refused redirect will fail the same way again.
func transient(err error) bool {
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case strings.Contains(err.Error(), errHTTP2ConnectionLost):
		return true
	}
	return refused(err)
}

// refused reports whether the request certainly never reached the service:
// the connection could not be made.
func refused(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}
