package server

import (
	"net/http"
	"net/http/pprof"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// AdminRoute is an operator's endpoint another module adds to the admin
// listener (fx group "admin_routes").
type AdminRoute struct {
	// Pattern is an http.ServeMux pattern, e.g. "GET /admin/webhooks/dead-letters".
	Pattern string
	Handler http.Handler
}

// NewAdminHandler serves the probes, the metrics, the routes other modules
// add and, when enabled, pprof. It lives on its own port without
// authentication, so it must not be exposed outside the cluster.
func NewAdminHandler(h *Health, reg *prometheus.Registry, enablePprof bool, routes ...AdminRoute) http.Handler {
	mux := http.NewServeMux()
	for _, r := range routes {
		mux.Handle(r.Pattern, r.Handler)
	}
	mux.HandleFunc("GET /startupz", h.Startupz)
	mux.HandleFunc("GET /livez", h.Livez)
	mux.HandleFunc("GET /readyz", h.Readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry:          reg, // counts its own scrape errors
		EnableOpenMetrics: true,
	}))
	if enablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Sampling rates of the contention profiles that --pprof turns on: about one
// in a hundred mutex contentions, and blocking events of a microsecond or
// more. Off (the runtime's default) the mutex and block profiles are empty.
const (
	mutexProfileFraction = 100
	blockProfileRateNs   = 1000
)

// EnableContentionProfiles starts the runtime's sampling of mutex contention
// and blocking for /debug/pprof/mutex and /debug/pprof/block. It is
// process-wide, so the caller decides, once: --pprof does.
func EnableContentionProfiles() {
	runtime.SetMutexProfileFraction(mutexProfileFraction)
	runtime.SetBlockProfileRate(blockProfileRateNs)
}
