package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"
)

// APIHandler is the API's root handler, which the API listener serves (the
// httpapi module provides it).
type APIHandler http.Handler

// Announce runs once the API listener is bound, with its address (the
// development banner of the auth module).
type Announce func(apiAddr string)

// Params are what the servers are built from.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Options   Options
	API       APIHandler
	Store     Pinger
	Registry  *prometheus.Registry
	Log       *zap.Logger
	// Announce is optional: a composition without the auth module has none.
	Announce Announce `optional:"true"`
	// AdminRoutes are the operator endpoints of other modules.
	AdminRoutes []AdminRoute `group:"admin_routes"`
}

// Servers are the running listeners.
type Servers struct {
	API    *HTTPServer
	Admin  *HTTPServer
	Health *Health
}

// New builds both servers and ties them to the application's lifecycle:
// admin then API bind at start; at stop, /readyz fails first, the API keeps
// serving for ShutdownDelay, then drains, and the admin listener goes last.
func New(p Params) *Servers {
	log := p.Log.Named("server")
	if p.Options.Pprof {
		EnableContentionProfiles()
	}
	health := NewHealth(p.Store, p.Options.ReadyTimeout, log)
	s := &Servers{
		Health: health,
		API:    NewHTTPServer("API", "--http-addr", p.Options.HTTPAddr, p.API, p.Options.HTTP, log),
		Admin: NewHTTPServer("admin", "--admin-addr", p.Options.AdminAddr,
			NewAdminHandler(health, p.Registry, p.Options.Pprof, p.AdminRoutes...), p.Options.HTTP, log),
	}
	p.Lifecycle.Append(fx.StartStopHook(func(ctx context.Context) error {
		if err := s.Admin.Start(ctx); err != nil {
			return err
		}
		if err := s.API.Start(ctx); err != nil {
			_ = s.Admin.Shutdown(ctx)
			return err
		}
		health.SetStarted()
		if p.Announce != nil {
			p.Announce(s.API.Addr().String())
		}
		return nil
	}, func(ctx context.Context) error {
		health.SetDraining()
		if d := p.Options.ShutdownDelay; d > 0 {
			log.Info("draining: readiness failing, still serving", zap.Duration("delay", d))
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		apiErr := s.API.Shutdown(ctx)
		adminErr := s.Admin.Shutdown(ctx)
		log.Info("servers stopped")
		return errors.Join(apiErr, adminErr)
	}))
	return s
}

// Module provides and runs the servers.
var Module = fx.Module("server",
	fx.Provide(New),
	fx.Invoke(func(*Servers) {}),
)
