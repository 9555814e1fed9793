package client

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
)

// seen is one request a test server received.
type seen struct {
	method, path, query, auth, body string
}

// scripted is a test server that answers its n-th request with script[n]
// (the last one repeats) and records every request.
type scripted struct {
	*httptest.Server
	mu     sync.Mutex
	script []http.HandlerFunc
	got    []seen
}

func newScripted(t *testing.T, script ...http.HandlerFunc) *scripted {
	t.Helper()
	s := &scripted{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.got)
		s.got = append(s.got, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), string(b)})
		s.mu.Unlock()
		s.script[min(n, len(s.script)-1)](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scripted) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.got...)
}

// reply answers status with body (JSON unless the header pairs set a
// Content-Type) and the header pairs.
func reply(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		if body != "" && w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// unavailable is the service's 503.
func unavailable(retryAfter string) http.HandlerFunc {
	if retryAfter == "" {
		return reply(503, `{"error":50301,"message":"store unavailable; retry later"}`)
	}
	return reply(503, `{"error":50301,"message":"store unavailable; retry later"}`, "Retry-After", retryAfter)
}

// rateLimited is the service's 429.
func rateLimited(retryAfter string) http.HandlerFunc {
	const body = `{"error":42901,"message":"rate limit of 10 requests per second exhausted; retry after Retry-After seconds"}`
	if retryAfter == "" {
		return reply(429, body)
	}
	return reply(429, body, "Retry-After", retryAfter)
}

// cutOff reads the request and closes the connection without an answer:
// the request reached the service, the reply was lost.
func cutOff(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// clock is a fake clock and sleep: waits are recorded, not waited.
type clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// withClock replaces the policy's clock and sleep, fixes a Retry-After's
// jitter at j and takes the backoff's away: each backoff wait is then the
// middle of its jitter range, 3/4 of min(ceiling, base·2^(n-1)).
func withClock(c *clock, j float64) Option {
	return func(ps *PlantStore) {
		ps.retry.now, ps.retry.sleep = c.Now, c.Sleep
		ps.retry.jitter = func() float64 { return j }
		ps.retry.spread = 0
	}
}

// newTestClient is New against srv with a fake clock and jitter 0.
func newTestClient(t *testing.T, baseURL string, opts ...Option) (*PlantStore, *clock) {
	t.Helper()
	clk := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	ps, err := New(baseURL, "test-token", append([]Option{withClock(clk, 0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return ps, clk
}

// failingDoer answers its first len(errs) requests with errs, without
// sending them, and passes the rest to next.
type failingDoer struct {
	mu   sync.Mutex
	errs []error
	next HttpRequestDoer
}

func (d *failingDoer) Do(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	if len(d.errs) > 0 {
		err := d.errs[0]
		d.errs = d.errs[1:]
		d.mu.Unlock()
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	d.mu.Unlock()
	return d.next.Do(req)
}

// refusedErr is what a dial to a closed port returns. The port is held
// (bound, not listening) for the test: one closed after its choice could be
// bound by another process before the dial.
func refusedErr(t *testing.T) error {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(redistest.RefusedPort(t)))
	_, err := http.Get("http://" + addr + "/")
	if err == nil {
		t.Fatal("a closed port accepted a connection")
	}
	return err
}
