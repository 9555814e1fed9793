// Command k8s-webhook-receiver is the webhook subscriber of the test
// cluster's Prometheus and tracing scenarios (tools/k8s/cluster-test.d): the
// releases there deliver their plant.created and plant.deleted events to it,
// so that their delivery metrics and spans are real. It answers
//
//	POST /hooks/...  a delivery: read (at most 1 MiB), counted, 204
//	GET /stats       {"hooks": N} as JSON (the readiness probe)
//
// It checks no signature: the service's own tests and the OpenAPI check do.
//
//	k8s-webhook-receiver -addr :8080
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", ":8080", "listen address")
	flag.Parse()
	srv := &http.Server{Addr: *addr, Handler: new(receiver).handler(), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("k8s-webhook-receiver listening on %s", *addr)
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-webhook-receiver:", err)
		os.Exit(1)
	}
}

// receiver counts the deliveries it took.
type receiver struct{ hooks atomic.Int64 }

func (rc *receiver) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/", rc.hook)
	mux.HandleFunc("GET /stats", rc.stats)
	return mux
}

func (rc *receiver) hook(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 1<<20)); err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	rc.hooks.Add(1)
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) stats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int64{"hooks": rc.hooks.Load()})
}
