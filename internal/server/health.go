package server

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Pinger checks that a dependency answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Health answers the probes.
//
//   - /startupz: start-up has finished: every component started and both
//     listeners are bound. Until then liveness is not worth asking.
//   - /livez: the process serves HTTP. Failing it means restart me.
//   - /readyz: started, not draining, and the store has answered once since
//     start. Failing it means send me no traffic for now.
//
// Readiness is not tied to the store once it has been reached: the store is
// shared by every replica, so an outage would take them all out of the
// Service at once and clients would get connection errors instead of the
// 503 + Retry-After the API answers while the store is away. The first
// answer is still required, so that a rollout with a wrong store address
// stops at its first pod instead of replacing working ones. /readyz keeps
// pinging the store, bounded by the readiness timeout, so that the probe
// doubles as a heartbeat: an outage shows in the store metrics and the log
// even when no request comes in, and in the body of the answer.
type Health struct {
	store    Pinger
	timeout  time.Duration
	started  atomic.Bool
	draining atomic.Bool
	reached  atomic.Bool // the store has answered a ping since start
	log      *zap.Logger
}

// NewHealth returns the probes' handlers over store.
func NewHealth(store Pinger, timeout time.Duration, log *zap.Logger) *Health {
	return &Health{store: store, timeout: timeout, log: log}
}

// SetStarted marks start-up as finished.
func (h *Health) SetStarted() { h.started.Store(true) }

// Startupz answers 200 once start-up has finished, 503 before.
func (h *Health) Startupz(w http.ResponseWriter, _ *http.Request) {
	if !h.started.Load() {
		writeProbe(w, http.StatusServiceUnavailable, "starting")
		return
	}
	writeProbe(w, http.StatusOK, "ok")
}

// SetDraining marks the server as shutting down: /readyz fails from now on.
func (h *Health) SetDraining() { h.draining.Store(true) }

// Livez answers 200 while the process serves.
func (h *Health) Livez(w http.ResponseWriter, _ *http.Request) {
	writeProbe(w, http.StatusOK, "ok")
}

// Readyz answers 200 once started and the store has answered once, 503
// before that and while draining. A store that stops answering afterwards
// is reported in the body ("ok, store unreachable") but keeps the 200.
func (h *Health) Readyz(w http.ResponseWriter, r *http.Request) {
	if !h.started.Load() {
		writeProbe(w, http.StatusServiceUnavailable, "starting")
		return
	}
	if h.draining.Load() {
		writeProbe(w, http.StatusServiceUnavailable, "draining")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	if err := h.store.Ping(ctx); err != nil {
		h.log.Warn("readiness: store unreachable", zap.Error(err), zap.Bool("ready", h.reached.Load()))
		if !h.reached.Load() {
			writeProbe(w, http.StatusServiceUnavailable, "store not reached yet")
			return
		}
		writeProbe(w, http.StatusOK, "ok, store unreachable")
		return
	}
	h.reached.Store(true)
	writeProbe(w, http.StatusOK, "ok")
}

func writeProbe(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}
