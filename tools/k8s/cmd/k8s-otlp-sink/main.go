// Command k8s-otlp-sink is the OTLP trace receiver of the test cluster's
// Prometheus scenario (tools/k8s/cluster-test.d/60-prometheus.sh): it stands
// where a user's OpenTelemetry Collector would, so that plantstore exports
// its sampled spans for real and its histogram exemplars carry the ids of
// traces a collector received. It takes OTLP/HTTP protobuf exports
// (POST /v1/traces, gzip or not) with the receiver the tests use
// (internal/otlptest), remembers every trace id it saw, and answers
//
//	GET /traces/ID   200 if a span of trace ID (32 hex digits) arrived, else 404
//	GET /stats       {"requests": N, "spans": N, "traces": N, "hooks": N} as JSON
//
// It also takes webhook deliveries (POST /hooks/..., counted and answered
// 204), so that the same pod can be the release's webhook subscriber.
//
// It is a module of its own (go.mod beside this file) because it imports
// the main module: in tools/k8s's module that import would move the
// Kubernetes tools' dependencies to the service's versions.
//
//	k8s-otlp-sink -addr :4318 -max-traces 1000000
package main

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/plantstore/plantstore/internal/otlptest"
)

func main() {
	addr := flag.String("addr", ":4318", "listen address")
	maxTraces := flag.Int("max-traces", 1_000_000, "trace ids kept at most; later ones are counted, not kept")
	flag.Parse()
	s := newSink(*maxTraces)
	srv := &http.Server{Addr: *addr, Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("k8s-otlp-sink listening on %s", *addr)
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-otlp-sink:", err)
		os.Exit(1)
	}
}

// sink holds the trace ids received.
type sink struct {
	mu       sync.Mutex
	max      int
	traces   map[[16]byte]struct{}
	requests int
	spans    int
	hooks    int
}

func newSink(max int) *sink { return &sink{max: max, traces: map[[16]byte]struct{}{}} }

func (s *sink) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(otlptest.Path, otlptest.Handler(s.export, func(r otlptest.Refusal) { log.Printf("refused an export: %v", r) }))
	mux.HandleFunc("GET /traces/{id}", s.lookup)
	mux.HandleFunc("GET /stats", s.stats)
	mux.HandleFunc("POST /hooks/", s.hook)
	return mux
}

// export records one decoded export; the receiver has checked that every
// trace id is 16 bytes.
func (s *sink) export(e otlptest.Export) {
	spans := e.Spans()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.spans += len(spans)
	for _, sp := range spans {
		if len(s.traces) < s.max {
			s.traces[[16]byte(sp.GetTraceId())] = struct{}{}
		}
	}
}

func (s *sink) lookup(w http.ResponseWriter, r *http.Request) {
	b, err := hex.DecodeString(r.PathValue("id"))
	if err != nil || len(b) != 16 {
		http.Error(w, "want 32 hex digits", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	_, ok := s.traces[[16]byte(b)]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "trace not received", http.StatusNotFound)
		return
	}
	fmt.Fprintln(w, "received")
}

func (s *sink) stats(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := map[string]int{"requests": s.requests, "spans": s.spans, "traces": len(s.traces), "hooks": s.hooks}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// hook takes one webhook delivery.
func (s *sink) hook(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 1<<20))
	s.mu.Lock()
	s.hooks++
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
