package servicetest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
)

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {1, 1}, {0, 1}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("Percentile of nothing is not 0")
	}
	// One slow request in 1,000 is the p99.9 (rank 999) but not the p99,
	// although 99.9/100*1000 is 999.0000000000001 in floating point.
	ds = make([]time.Duration, 1000)
	for i := range ds {
		ds[i] = time.Millisecond
	}
	ds[999] = time.Second
	for p, want := range map[float64]time.Duration{99: time.Millisecond, 99.9: time.Millisecond, 99.95: time.Second} {
		if got := Percentile(ds, p); got != want {
			t.Errorf("Percentile(%v) of 999 × 1ms and 1s = %v, want %v", p, got, want)
		}
	}
}

// TestLoad: the load sends unique ids, records statuses, Retry-After and
// error codes, keeps its connections alive and stops at its count bound.
func TestLoad(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	conns := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		conns[r.RemoteAddr] = true
		id := r.Header.Get("Idempotency-Key")
		seen[id]++
		if r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("Authorization %q", r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(id, "7") {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(503)
			_, _ = w.Write([]byte(`{"error": 50301, "message": "store unavailable"}`))
			return
		}
		_, _ = w.Write([]byte(`{"name": "x"}`))
	}))
	defer srv.Close()

	l := StartLoad(&Service{API: srv.URL, Token: "tok"}, LoadOptions{Workers: 4, MaxRequests: 200, FirstID: 1000, IdempotencyKey: true})
	res := l.Wait()
	if len(res.Records) != 200 || len(seen) != 200 {
		t.Fatalf("%d records, %d distinct ids, want 200", len(res.Records), len(seen))
	}
	if n := res.Count(503); n != 20 {
		t.Fatalf("%d 503s, want 20", n)
	}
	for _, rec := range res.Filter(func(r Record) bool { return r.Status == 503 }) {
		if rec.RetryAfter != "1" || rec.Code != 50301 || rec.BodyErr != nil {
			t.Fatalf("503 record %+v", rec)
		}
	}
	if n := len(res.Acknowledged()); n != 180 {
		t.Fatalf("%d acknowledged, want 180", n)
	}
	// About one per worker: the transport may dial a spare while a worker
	// waits for a connection another is about to release.
	if len(conns) > 8 {
		t.Fatalf("%d connections for 4 workers and 200 requests: keep-alive not used", len(conns))
	}
}

// TestLoadRetriesRefused: with RetryRefused a refused connection is tried
// again until the load stops, and recorded as refused.
func TestLoadRetriesRefused(t *testing.T) {
	// Held (bound, not listening) for the test: a port closed after its
	// choice could be bound by another process during the load.
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(redistest.RefusedPort(t)))
	load := StartLoad(&Service{API: "http://" + addr, Token: "tok"}, LoadOptions{Workers: 1, Duration: 300 * time.Millisecond, RetryRefused: true})
	res := load.Wait()
	if len(res.Records) != 1 || !res.Records[0].Refused || res.Records[0].Attempts < 2 {
		t.Fatalf("records %+v, want one refused request tried several times", res.Records)
	}
}
