// Package app composes the service from its fx modules.
package app

import (
	"time"

	"go.uber.org/fx"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/config"
	"github.com/plantstore/plantstore/internal/gctune"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/oidcauth"
	"github.com/plantstore/plantstore/internal/ratelimit"
	"github.com/plantstore/plantstore/internal/server"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/telemetry"
	"github.com/plantstore/plantstore/internal/webhook"
)

// New returns the application for a parsed configuration. extra options
// (fx.Populate, fx.Replace) let tests reach into the graph.
func New(c config.Config, extra ...fx.Option) *fx.App {
	return fx.New(append([]fx.Option{
		config.Module(c),
		telemetry.Module,
		telemetry.FxLogger,
		store.Module,
		oidcauth.Module,
		auth.Module,
		ratelimit.Module,
		httpapi.Module,
		server.Module,
		webhook.Module,
		gctune.Module,
		// The store is the servers' readiness check.
		fx.Provide(func(b store.Backend) server.Pinger { return b }),
		// Stopping may wait out the drain delay, then the drain itself.
		fx.StopTimeout(c.Server.ShutdownDelay + c.Server.ShutdownTimeout + 5*time.Second),
	}, extra...)...)
}
