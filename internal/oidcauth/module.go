package oidcauth

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/telemetry"
)

// Params are what the verifier is built from.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Options   Options
	Log       *zap.Logger
	Registry  prometheus.Registerer
	Tracing   *telemetry.Tracing
}

// Result is the JWT verifier the auth module takes: nil without issuers,
// and then nothing of this package runs or registers.
type Result struct {
	fx.Out

	Verifier auth.JWTVerifier
}

// New builds the verifier of the configured issuers and fetches their
// keys in the background while the application runs.
func New(p Params) (Result, error) {
	if len(p.Options.Issuers) == 0 {
		return Result{}, nil
	}
	v, err := NewVerifier(p.Options, p.Log.Named("jwt"), p.Registry, p.Tracing.Provider)
	if err != nil {
		return Result{}, err
	}
	p.Lifecycle.Append(fx.StartStopHook(v.Start, v.Stop))
	return Result{Verifier: v}, nil
}

// Module provides the JWT verifier.
var Module = fx.Module("oidcauth", fx.Provide(New))
