package server

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewAdminHandler serves the probes, the metrics and, when enabled, pprof.
// It lives on its own port without authentication, so it must not be exposed
// outside the cluster.
func NewAdminHandler(h *Health, reg *prometheus.Registry, enablePprof bool) http.Handler {
	mux := http.NewServeMux()
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
