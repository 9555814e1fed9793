package server

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
)

const testCounterName = "plantstore_admin_test_events_total"

// newTestAdmin returns an admin handler over a started, healthy Health and a
// fresh registry holding one test counter incremented 3 times.
func newTestAdmin(t *testing.T, pprofOn bool) http.Handler {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: testCounterName,
		Help: "A counter only the admin tests register.",
	})
	reg.MustRegister(c)
	c.Add(3)
	h := NewHealth(&fakePinger{}, time.Second, zaptest.NewLogger(t))
	h.SetStarted()
	return NewAdminHandler(h, reg, pprofOn)
}

func serve(h http.Handler, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestAdminRoutes(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		body         string // a substring of the body, if set
	}{
		{http.MethodGet, "/startupz", http.StatusOK, "ok"},
		{http.MethodGet, "/livez", http.StatusOK, "ok"},
		{http.MethodGet, "/readyz", http.StatusOK, "ok"},
		{http.MethodHead, "/livez", http.StatusOK, ""},
		{http.MethodPost, "/livez", http.StatusMethodNotAllowed, ""},
		{http.MethodPost, "/readyz", http.StatusMethodNotAllowed, ""},
		{http.MethodDelete, "/metrics", http.StatusMethodNotAllowed, ""},
		{http.MethodGet, "/nope", http.StatusNotFound, ""},
		{http.MethodGet, "/", http.StatusNotFound, ""},
		{http.MethodGet, "/debug/pprof/", http.StatusNotFound, ""},
		{http.MethodGet, "/debug/pprof/cmdline", http.StatusNotFound, ""},
	}
	h := newTestAdmin(t, false)
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := serve(h, tt.method, tt.path)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d (body %q)", rec.Code, tt.status, rec.Body.String())
			}
			if tt.body != "" && !strings.Contains(rec.Body.String(), tt.body) {
				t.Errorf("body = %q, want it to contain %q", rec.Body.String(), tt.body)
			}
			if tt.status == http.StatusMethodNotAllowed {
				if allow := rec.Header().Get("Allow"); !strings.Contains(allow, http.MethodGet) {
					t.Errorf("Allow = %q, want it to list GET", allow)
				}
			}
		})
	}
}

func TestAdminMetrics(t *testing.T) {
	rec := serve(newTestAdmin(t, false), http.MethodGet, "/metrics")
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 (body %q)", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want the text exposition format", ct)
	}
	body := rec.Body.String()
	if !strings.Contains(body, testCounterName+" 3") {
		t.Errorf("exposition lacks %s 3 from the passed registry:\n%s", testCounterName, body)
	}
	// The passed registry has no Go collector; the default one does. Seeing
	// its metrics would mean the handler serves the global registry.
	if strings.Contains(body, "go_goroutines") {
		t.Errorf("exposition contains go_goroutines: the default registry is served:\n%s", body)
	}
}

func TestAdminMetricsOpenMetrics(t *testing.T) {
	h := newTestAdmin(t, false)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("Content-Type = %q, want OpenMetrics", ct)
	}
	if body := rec.Body.String(); !strings.Contains(body, testCounterName) || !strings.HasSuffix(body, "# EOF\n") {
		t.Errorf("OpenMetrics exposition missing the counter or # EOF:\n%s", body)
	}
}

func TestAdminPprof(t *testing.T) {
	tests := []struct {
		name    string
		enabled bool
		path    string
		status  int
	}{
		{"disabled index", false, "/debug/pprof/", http.StatusNotFound},
		{"disabled symbol", false, "/debug/pprof/symbol", http.StatusNotFound},
		{"disabled named profile", false, "/debug/pprof/heap", http.StatusNotFound},
		{"enabled index", true, "/debug/pprof/", http.StatusOK},
		{"enabled cmdline", true, "/debug/pprof/cmdline", http.StatusOK},
		{"enabled symbol", true, "/debug/pprof/symbol", http.StatusOK},
		{"enabled named profile", true, "/debug/pprof/heap", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(newTestAdmin(t, tt.enabled), http.MethodGet, tt.path)
			if rec.Code != tt.status {
				t.Errorf("GET %s with pprof=%v: status = %d, want %d", tt.path, tt.enabled, rec.Code, tt.status)
			}
		})
	}
}

func TestEnableContentionProfiles(t *testing.T) {
	before := runtime.SetMutexProfileFraction(-1) // -1 reads the rate without changing it
	t.Cleanup(func() { runtime.SetMutexProfileFraction(before); runtime.SetBlockProfileRate(0) })
	EnableContentionProfiles()
	if got := runtime.SetMutexProfileFraction(-1); got != mutexProfileFraction {
		t.Errorf("mutex profile fraction %d, want %d", got, mutexProfileFraction)
	}
}
