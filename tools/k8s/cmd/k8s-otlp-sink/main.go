// Command k8s-otlp-sink is the OTLP trace receiver of the test cluster's
// Prometheus scenario (tools/k8s/cluster-test.d/60-prometheus.sh): it stands
// where a user's OpenTelemetry Collector would, so that plantstore exports
// its sampled spans for real and its histogram exemplars carry the ids of
// traces a collector received. It accepts OTLP/HTTP protobuf exports
// (POST /v1/traces, gzip or not), remembers every trace id it saw, and
// answers
//
//	GET /traces/ID   200 if a span of trace ID (32 hex digits) arrived, else 404
//	GET /stats       {"requests": N, "spans": N, "traces": N, "hooks": N} as JSON
//
// It also takes webhook deliveries (POST /hooks/..., counted and answered
// 204), so that the same pod can be the release's webhook subscriber.
//
// It decodes only the fields it needs (resource_spans → scope_spans → spans
// → trace_id) with a protobuf walk of its own, so this module needs no
// OpenTelemetry dependency.
//
//	k8s-otlp-sink -addr :4318 -max-traces 1000000
package main

import (
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
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
	mux.HandleFunc("POST /v1/traces", s.export)
	mux.HandleFunc("GET /traces/{id}", s.lookup)
	mux.HandleFunc("GET /stats", s.stats)
	mux.HandleFunc("POST /hooks/", s.hook)
	return mux
}

// export takes one ExportTraceServiceRequest and answers an empty
// ExportTraceServiceResponse (a zero-length protobuf message).
func (s *sink) export(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = http.MaxBytesReader(w, r.Body, 64<<20)
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ids, err := traceIDs(data)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests++
	s.spans += len(ids)
	for _, id := range ids {
		if len(s.traces) < s.max {
			s.traces[id] = struct{}{}
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
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

// traceIDs returns the trace id of every span of an ExportTraceServiceRequest:
// resource_spans (1) → scope_spans (2) → spans (2) → trace_id (1).
func traceIDs(req []byte) ([][16]byte, error) {
	var ids [][16]byte
	err := eachField(req, 1, func(rs []byte) error {
		return eachField(rs, 2, func(ss []byte) error {
			return eachField(ss, 2, func(span []byte) error {
				return eachField(span, 1, func(id []byte) error {
					if len(id) != 16 {
						return fmt.Errorf("trace_id of %d bytes", len(id))
					}
					ids = append(ids, [16]byte(id))
					return nil
				})
			})
		})
	})
	return ids, err
}

var errTruncated = errors.New("truncated protobuf message")

// eachField calls fn with the payload of every length-delimited field number
// num of the message msg, skipping every other field.
func eachField(msg []byte, num uint64, fn func([]byte) error) error {
	for len(msg) > 0 {
		key, n := uvarint(msg)
		if n <= 0 {
			return errTruncated
		}
		msg = msg[n:]
		switch key & 7 {
		case 0: // varint
			_, n = uvarint(msg)
			if n <= 0 {
				return errTruncated
			}
			msg = msg[n:]
		case 1: // fixed64
			if len(msg) < 8 {
				return errTruncated
			}
			msg = msg[8:]
		case 5: // fixed32
			if len(msg) < 4 {
				return errTruncated
			}
			msg = msg[4:]
		case 2: // length-delimited
			l, n := uvarint(msg)
			if n <= 0 || uint64(len(msg)-n) < l {
				return errTruncated
			}
			payload := msg[n : n+int(l)]
			msg = msg[n+int(l):]
			if key>>3 == num {
				if err := fn(payload); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("unsupported wire type %d", key&7)
		}
	}
	return nil
}

// uvarint decodes a protobuf varint; n <= 0 when msg is too short or it
// overflows.
func uvarint(msg []byte) (v uint64, n int) {
	for i, b := range msg {
		if i == 10 {
			return 0, -1
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}
