package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
)

// fakePinger answers Ping with err, or, when block is set, blocks until the
// context ends and returns its error. It records the context's deadline.
type fakePinger struct {
	err   error
	block bool

	mu          sync.Mutex
	calls       int
	hadDeadline bool
	deadline    time.Time
	calledAt    time.Time
}

func (p *fakePinger) Ping(ctx context.Context) error {
	p.mu.Lock()
	p.calls++
	p.calledAt = time.Now()
	p.deadline, p.hadDeadline = ctx.Deadline()
	p.mu.Unlock()
	if p.block {
		<-ctx.Done()
		return ctx.Err()
	}
	return p.err
}

func (p *fakePinger) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// probe calls handler on a GET of path and returns the recorded response.
func probe(t *testing.T, handler http.HandlerFunc, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	handler(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func assertProbe(t *testing.T, rec *httptest.ResponseRecorder, wantStatus int, wantBody string) {
	t.Helper()
	if rec.Code != wantStatus {
		t.Errorf("status = %d, want %d (body %q)", rec.Code, wantStatus, rec.Body.String())
	}
	if got := strings.TrimSpace(rec.Body.String()); got != wantBody {
		t.Errorf("body = %q, want %q", got, wantBody)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want text/plain", ct)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
}

func TestStartupz(t *testing.T) {
	h := NewHealth(&fakePinger{}, time.Second, zaptest.NewLogger(t))
	assertProbe(t, probe(t, h.Startupz, "/startupz"), http.StatusServiceUnavailable, "starting")
	h.SetStarted()
	assertProbe(t, probe(t, h.Startupz, "/startupz"), http.StatusOK, "ok")
	// Draining does not undo start-up.
	h.SetDraining()
	assertProbe(t, probe(t, h.Startupz, "/startupz"), http.StatusOK, "ok")
}

func TestReadyz(t *testing.T) {
	errDown := errors.New("connection refused")
	tests := []struct {
		name     string
		reached  bool // the store answered an earlier probe
		ping     error
		started  bool
		draining bool
		status   int
		body     string
		wantPing bool
		wantWarn bool
	}{
		{name: "before start", status: 503, body: "starting"},
		{name: "before start, store down", ping: errDown, status: 503, body: "starting"},
		{name: "started, store up", started: true, status: 200, body: "ok", wantPing: true},
		// A store never reached keeps the pod out: a wrong address stops a rollout.
		{name: "started, store never reached", ping: errDown, started: true, status: 503, body: "store not reached yet", wantPing: true, wantWarn: true},
		// Once reached, an outage of the shared store keeps the pod in the
		// Service, answering 503 + Retry-After, and says so in the body.
		{name: "started, store down after it answered", reached: true, ping: errDown, started: true, status: 200, body: "ok, store unreachable", wantPing: true, wantWarn: true},
		{name: "started, store back", reached: true, started: true, status: 200, body: "ok", wantPing: true},
		{name: "draining, store up", reached: true, started: true, draining: true, status: 503, body: "draining"},
		{name: "draining, store down", reached: true, ping: errDown, started: true, draining: true, status: 503, body: "draining"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			store := &fakePinger{}
			h := NewHealth(store, time.Second, zap.New(core))
			if tt.started {
				h.SetStarted()
			}
			if tt.reached {
				assertProbe(t, probe(t, h.Readyz, "/readyz"), http.StatusOK, "ok")
			}
			store.mu.Lock()
			store.err, store.calls = tt.ping, 0
			store.mu.Unlock()
			if tt.draining {
				h.SetDraining()
			}

			assertProbe(t, probe(t, h.Readyz, "/readyz"), tt.status, tt.body)

			if pinged := store.Calls() > 0; pinged != tt.wantPing {
				t.Errorf("store pinged = %v, want %v", pinged, tt.wantPing)
			}
			warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
			if got := len(warns) == 1; got != tt.wantWarn || len(warns) > 1 {
				t.Fatalf("warn entries = %d (%v), want warned = %v", len(warns), warns, tt.wantWarn)
			}
			if tt.wantWarn {
				e := warns[0]
				if !strings.Contains(e.Message, "store unreachable") {
					t.Errorf("warn message = %q, want it to mention the store", e.Message)
				}
				if got, ok := e.ContextMap()["error"]; !ok || got != errDown.Error() {
					t.Errorf("warn error field = %v, want %q", got, errDown)
				}
			}
		})
	}
}

func TestReadyzPingDeadline(t *testing.T) {
	const timeout = 50 * time.Millisecond

	t.Run("deadline within the timeout", func(t *testing.T) {
		store := &fakePinger{}
		h := NewHealth(store, timeout, zaptest.NewLogger(t))
		h.SetStarted()
		assertProbe(t, probe(t, h.Readyz, "/readyz"), http.StatusOK, "ok")

		store.mu.Lock()
		defer store.mu.Unlock()
		if !store.hadDeadline {
			t.Fatal("Ping got a context without a deadline")
		}
		if latest := store.calledAt.Add(timeout); store.deadline.After(latest) {
			t.Errorf("Ping deadline %v is later than call time + timeout (%v)", store.deadline, latest)
		}
	})

	t.Run("slow store is cut at the timeout", func(t *testing.T) {
		core, logs := observer.New(zapcore.WarnLevel)
		store := &fakePinger{block: true}
		h := NewHealth(store, timeout, zap.New(core))
		h.SetStarted()

		done := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			rec := httptest.NewRecorder()
			h.Readyz(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			done <- rec
		}()
		var rec *httptest.ResponseRecorder
		select {
		case rec = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("/readyz did not answer: the store ping was not bounded by the readiness timeout")
		}
		assertProbe(t, rec, http.StatusServiceUnavailable, "store not reached yet")
		warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
		if len(warns) != 1 {
			t.Fatalf("warn entries = %d, want 1", len(warns))
		}
		if got := warns[0].ContextMap()["error"]; got != context.DeadlineExceeded.Error() {
			t.Errorf("warn error field = %v, want %q", got, context.DeadlineExceeded)
		}
	})
}

func TestLivez(t *testing.T) {
	tests := []struct {
		name     string
		store    Pinger
		started  bool
		draining bool
	}{
		{name: "before start", store: &fakePinger{}},
		{name: "started", store: &fakePinger{}, started: true},
		{name: "store down", store: &fakePinger{err: errors.New("down")}, started: true},
		{name: "draining", store: &fakePinger{}, started: true, draining: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHealth(tt.store, time.Second, zaptest.NewLogger(t))
			if tt.started {
				h.SetStarted()
			}
			if tt.draining {
				h.SetDraining()
			}
			assertProbe(t, probe(t, h.Livez, "/livez"), http.StatusOK, "ok")
			if n := tt.store.(*fakePinger).Calls(); n != 0 {
				t.Errorf("/livez pinged the store %d times; liveness must not depend on it", n)
			}
		})
	}
}
