package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/docspage"
	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/ratelimit"
	"github.com/plantstore/plantstore/internal/server"
	"github.com/plantstore/plantstore/internal/telemetry"
)

// Params are what the API handler is built from.
type Params struct {
	fx.In

	Options      Options
	Repository   plant.Repository
	Log          *zap.Logger
	Registry     prometheus.Registerer
	Tracing      *telemetry.Tracing
	Authenticate auth.Authenticate
	Authorize    auth.Authorize
	Limit        ratelimit.Limit
}

// Result is the API's root handler, which the server module serves.
type Result struct {
	fx.Out

	Handler server.APIHandler
}

// New builds the instrumented API handler.
func New(p Params) (Result, error) {
	creations, err := NewCreationCounter(p.Registry)
	if err != nil {
		return Result{}, err
	}
	in, err := NewInstrumentation(p.Registry, p.Tracing.Provider, p.Tracing.Propagator, p.Log)
	if err != nil {
		return Result{}, err
	}
	log := p.Log.Named("api")
	var docs http.Handler
	if p.Options.DocsPage {
		page, err := docspage.New()
		if err != nil {
			return Result{}, err
		}
		docs = page
	}
	router := NewRouter(RouterParams{
		CreatePlant:  NewCreatePlantHandler(p.Repository, p.Options.StoreTimeout, log, creations.Observe),
		ListPlants:   NewListPlantsHandler(p.Repository, p.Options.StoreTimeout, log),
		GetPlant:     NewGetPlantHandler(p.Repository, p.Options.StoreTimeout, log),
		DeletePlant:  NewDeletePlantHandler(p.Repository, p.Options.StoreTimeout, log),
		OpenAPI:      NewOpenAPIHandler(api.OpenAPI),
		Docs:         docs,
		Authenticate: p.Authenticate,
		Authorize:    p.Authorize,
		Limit:        p.Limit,
	})
	return Result{Handler: in.Wrap(router)}, nil
}

// Module provides the API handler.
var Module = fx.Module("httpapi", fx.Provide(New))
