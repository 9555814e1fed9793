package httpapi

import (
	"net/http"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/plant"
)

// Params are what the API handler is built from.
type Params struct {
	fx.In

	Options      Options
	Repository   plant.Repository
	Log          *zap.Logger
	Authenticate func(http.Handler) http.Handler `name:"authenticate"`
}

// Result is the API's root handler, named for the server module.
type Result struct {
	fx.Out

	Handler http.Handler `name:"api"`
}

// New builds the API handler.
func New(p Params) Result {
	return Result{Handler: NewRouter(RouterParams{
		CreatePlant:  NewCreatePlantHandler(p.Repository, p.Options.StoreTimeout, p.Log.Named("api"), nil),
		OpenAPI:      NewOpenAPIHandler(api.OpenAPI),
		Authenticate: p.Authenticate,
	})}
}

// Module provides the API handler.
var Module = fx.Module("httpapi", fx.Provide(New))
