package config

import (
	"go.uber.org/fx"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/gctune"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/oidcauth"
	"github.com/plantstore/plantstore/internal/ratelimit"
	"github.com/plantstore/plantstore/internal/server"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/telemetry"
	"github.com/plantstore/plantstore/internal/webhook"
)

// Parts hands each module its own options, so that no module depends on
// the configuration as a whole.
type Parts struct {
	fx.Out

	Log       telemetry.LogOptions
	Auth      auth.Options
	JWT       oidcauth.Options
	Redis     store.RedisOptions
	API       httpapi.Options
	RateLimit ratelimit.Options
	Server    server.Options
	Webhook   webhook.Options
	GC        gctune.Options
}

// Module provides the parts of a parsed Config.
func Module(c Config) fx.Option {
	return fx.Module("config",
		fx.Supply(c),
		fx.Provide(func(c Config) Parts {
			return Parts{Log: c.Log, Auth: c.Auth, JWT: c.JWT, Redis: c.Redis, API: c.API, RateLimit: c.RateLimit, Server: c.Server, Webhook: c.Webhook, GC: c.GC}
		}),
	)
}
