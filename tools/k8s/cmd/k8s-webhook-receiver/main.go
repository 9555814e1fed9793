// Command k8s-webhook-receiver is the webhook subscriber of the test
// cluster's Prometheus, tracing and Sentinel scenarios
// (tools/k8s/cluster-test.d): the releases there deliver their plant.created
// and plant.deleted events to it, so that their delivery metrics and spans
// are real, and so that a scenario can ask whether every plant it created
// raised its event. It answers
//
//	POST /hooks/...  a delivery: read (at most 1 MiB), counted, 204; the id
//	                 of a plant.created event's plant remembered
//	GET /stats       {"hooks": N, "created": distinct plants} as JSON (the
//	                 readiness probe)
//	POST /missing    a JSON array of plant ids: those of them whose
//	                 plant.created never arrived, as a JSON array
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
	"sync"
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

// receiver counts the deliveries it took, and remembers the plants whose
// creation they announced (a delivery may come twice: at least once).
type receiver struct {
	hooks   atomic.Int64
	mu      sync.Mutex
	created map[int64]struct{}
}

func (rc *receiver) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/", rc.hook)
	mux.HandleFunc("GET /stats", rc.stats)
	mux.HandleFunc("POST /missing", rc.missing)
	return mux
}

// event is what the receiver reads of a delivery (docs/webhooks.md).
type event struct {
	Type string `json:"type"`
	Data struct {
		ID *int64 `json:"id"`
	} `json:"data"`
}

func (rc *receiver) hook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	rc.hooks.Add(1)
	var e event
	if json.Unmarshal(body, &e) == nil && e.Type == "plant.created" && e.Data.ID != nil {
		rc.mu.Lock()
		if rc.created == nil {
			rc.created = map[int64]struct{}{}
		}
		rc.created[*e.Data.ID] = struct{}{}
		rc.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) stats(w http.ResponseWriter, _ *http.Request) {
	rc.mu.Lock()
	created := len(rc.created)
	rc.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int64{"hooks": rc.hooks.Load(), "created": int64(created)})
}

func (rc *receiver) missing(w http.ResponseWriter, r *http.Request) {
	var ids []int64
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&ids); err != nil {
		http.Error(w, "want a JSON array of plant ids: "+err.Error(), http.StatusBadRequest)
		return
	}
	missing := []int64{}
	rc.mu.Lock()
	for _, id := range ids {
		if _, ok := rc.created[id]; !ok {
			missing = append(missing, id)
		}
	}
	rc.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(missing)
}
