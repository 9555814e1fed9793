package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/internal/auth"
)

// clock is a settable time for the in-process store.
type clock struct{ t time.Time }

func (c *clock) now() time.Time                    { return c.t }
func (c *clock) add(d time.Duration)               { c.t = c.t.Add(d) }
func newMemoryAt(c *clock) *Memory                 { m := NewMemory(); m.now = c.now; return m }
func rate(n int, p time.Duration, b int) auth.Rate { return auth.Rate{Count: n, Period: p, Burst: b} }

func TestMemoryGCRA(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	m := newMemoryAt(c)
	r := rate(10, time.Second, 3) // one every 100ms, three at once
	ctx := context.Background()
	for i, want := range []int{2, 1, 0} {
		d, _ := m.Allow(ctx, "a", r)
		if !d.Allowed || d.Remaining != want {
			t.Fatalf("request %d of the burst: %+v, want allowed with %d remaining", i+1, d, want)
		}
	}
	d, _ := m.Allow(ctx, "a", r)
	if d.Allowed || d.RetryAfter != 100*time.Millisecond || d.ResetAfter != 300*time.Millisecond {
		t.Fatalf("past the burst: %+v, want refused, retry after 100ms, full after 300ms", d)
	}
	// Another key has its own budget.
	if d, _ := m.Allow(ctx, "b", r); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("another key: %+v", d)
	}
	// One emission interval later, exactly one more.
	c.add(100 * time.Millisecond)
	if d, _ := m.Allow(ctx, "a", r); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after 100ms: %+v, want one allowed", d)
	}
	if d, _ := m.Allow(ctx, "a", r); d.Allowed {
		t.Fatalf("twice after 100ms: %+v, want refused", d)
	}
	// Idle long enough, the whole burst again and no more.
	c.add(10 * time.Second)
	allowed := 0
	for range 10 {
		if d, _ := m.Allow(ctx, "a", r); d.Allowed {
			allowed++
		}
	}
	if allowed != 3 {
		t.Fatalf("after idling: %d allowed, want the burst of 3", allowed)
	}
	// Over a long run at a high demand, the rate: 10/s for 5 s plus the burst.
	c.add(10 * time.Second)
	allowed = 0
	for range 5000 {
		c.add(time.Millisecond)
		if d, _ := m.Allow(ctx, "c", r); d.Allowed {
			allowed++
		}
	}
	if allowed < 52 || allowed > 53 {
		t.Fatalf("5 s at 1000/s against 10/s burst 3: %d allowed, want 52-53", allowed)
	}
}

// fakeStore answers from a function and counts calls.
type fakeStore struct {
	calls  atomic.Int32
	answer func(key string, r auth.Rate) (Decision, error)
	keys   []string
	rates  []auth.Rate
}

func (f *fakeStore) Allow(_ context.Context, key string, r auth.Rate) (Decision, error) {
	f.calls.Add(1)
	f.keys, f.rates = append(f.keys, key), append(f.rates, r)
	return f.answer(key, r)
}

func serve(l *Limiter, c *auth.Client) (*httptest.ResponseRecorder, bool) {
	served := false
	h := l.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served = true
		w.WriteHeader(http.StatusOK)
	}))
	req := httptest.NewRequest(http.MethodPost, "/plants", nil)
	if c != nil {
		req = req.WithContext(auth.WithClient(req.Context(), c))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, served
}

func client(t *testing.T, line string) *auth.Client {
	t.Helper()
	set, err := auth.ParseTokens(strings.NewReader(line), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return set.Lookup(strings.Fields(line)[0])
}

// TestMiddlewareWithoutLimit: a 1.0.0 line and no default rate: no store
// call and no header, the answer untouched.
func TestMiddlewareWithoutLimit(t *testing.T) {
	st := &fakeStore{answer: func(string, auth.Rate) (Decision, error) { return Decision{}, errors.New("must not be called") }}
	l := New(st, auth.Rate{}, time.Second, zap.NewNop(), nil)
	for name, c := range map[string]*auth.Client{"1.0.0 line": client(t, "tok\n"), "named, no rate": client(t, "tok name=a\n"), "no client": nil} {
		rec, served := serve(l, c)
		if !served || rec.Code != http.StatusOK || len(rec.Header()) != 0 {
			t.Errorf("%s: served %v, %d, headers %v; want served with no header", name, served, rec.Code, rec.Header())
		}
	}
	if st.calls.Load() != 0 {
		t.Errorf("%d store calls, want none", st.calls.Load())
	}
}

func TestMiddlewareRates(t *testing.T) {
	allow := func(string, auth.Rate) (Decision, error) {
		return Decision{Allowed: true, Remaining: 7, ResetAfter: 1500 * time.Millisecond}, nil
	}
	st := &fakeStore{answer: allow}
	l := New(st, rate(100, time.Minute, 100), time.Second, zap.NewNop(), nil)

	// A client without rate= gets the default, under its own key.
	rec, served := serve(l, client(t, "tok name=a\n"))
	if !served || rec.Header().Get("RateLimit-Policy") != `"client";q=100;w=60` || rec.Header().Get("RateLimit") != `"client";r=7;t=2` {
		t.Errorf("default rate: served %v, headers %v", served, rec.Header())
	}
	if st.keys[0] != "client:a" || st.rates[0] != rate(100, time.Minute, 100) {
		t.Errorf("store asked for %s %+v", st.keys[0], st.rates[0])
	}
	// rate= wins over the default, with its burst.
	serve(l, client(t, "tok name=b rate=5/s burst=2\n"))
	if st.keys[1] != "client:b" || st.rates[1] != rate(5, time.Second, 2) {
		t.Errorf("store asked for %s %+v", st.keys[1], st.rates[1])
	}
}

func TestMiddlewareRefuses(t *testing.T) {
	st := &fakeStore{answer: func(string, auth.Rate) (Decision, error) {
		return Decision{RetryAfter: 1200 * time.Millisecond, ResetAfter: 5 * time.Second}, nil
	}}
	l := New(st, auth.Rate{}, time.Second, zap.NewNop(), nil)
	rec, served := serve(l, client(t, "tok name=a rate=10/h\n"))
	if served || rec.Code != http.StatusTooManyRequests {
		t.Fatalf("served %v, status %d, want 429", served, rec.Code)
	}
	for k, want := range map[string]string{
		"Retry-After": "2", "RateLimit-Policy": `"client";q=10;w=3600`, "RateLimit": `"client";r=0;t=2`, "Content-Type": "application/json",
	} {
		if got := rec.Header().Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	var e struct {
		Error   int    `json:"error"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error != 42901 || !strings.Contains(e.Message, "10 requests per hour") {
		t.Errorf("body %s", rec.Body)
	}
}

// TestMiddlewareFailsOpen: a store error or timeout serves the request,
// tells the observer each time, and logs once per interval.
func TestMiddlewareFailsOpen(t *testing.T) {
	st := &fakeStore{answer: func(string, auth.Rate) (Decision, error) {
		return Decision{}, errors.New("dial tcp: connection refused")
	}}
	core, logs := observer.New(zapcore.InfoLevel)
	var failures atomic.Int32
	l := New(st, rate(1, time.Second, 1), 50*time.Millisecond, zap.New(core), func(error) { failures.Add(1) })
	for i := range 20 {
		rec, served := serve(l, client(t, "tok name=a\n"))
		if !served || rec.Code != http.StatusOK || rec.Header().Get("RateLimit") != "" {
			t.Fatalf("request %d: served %v, %d, headers %v; want served without limit headers", i, served, rec.Code, rec.Header())
		}
	}
	if failures.Load() != 20 {
		t.Errorf("%d failures counted, want 20", failures.Load())
	}
	if n := logs.Len(); n != 1 {
		t.Errorf("%d log lines for 20 failures within 10 s, want 1", n)
	}

	// A store slower than the timeout fails open after the timeout.
	slow := &slowStore{}
	l = New(slow, rate(1, time.Second, 1), 20*time.Millisecond, zap.NewNop(), func(error) { failures.Add(1) })
	start := time.Now()
	if _, served := serve(l, client(t, "tok name=a\n")); !served {
		t.Error("a request was not served when the store timed out")
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("the slow store held the request %v", elapsed)
	}
}

type slowStore struct{}

func (slowStore) Allow(ctx context.Context, _ string, _ auth.Rate) (Decision, error) {
	<-ctx.Done()
	return Decision{}, ctx.Err()
}
