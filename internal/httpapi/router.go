package httpapi

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/docspage"
)

// RouterParams are the parts the API router is built from.
type RouterParams struct {
	CreatePlant http.Handler
	ListPlants  http.Handler
	GetPlant    http.Handler
	DeletePlant http.Handler
	OpenAPI     http.Handler
	// Docs serves the API reference page at /docs and its files at
	// /docs/{file}; nil for none (the paths are then unknown: 404).
	Docs http.Handler
	// Authenticate guards every operation; the OpenAPI document and the
	// reference page are public.
	Authenticate func(http.Handler) http.Handler
	// Authorize returns the middleware that requires a scope of the
	// authenticated client; nil is auth.Require without telemetry.
	Authorize func(auth.Scope) func(http.Handler) http.Handler
	// Limit holds each client to its rate limit (after the scope check, so
	// that a refused request costs no budget); nil for none.
	Limit func(http.Handler) http.Handler
}

// Router serves the API's routes, which gorilla/mux matches. It serves the
// match itself rather than through mux.Router.ServeHTTP, which copies the
// whole request twice (for the route's variables, then for the route) and
// builds the router's middleware chain again on every request: a tenth of
// the bytes a create allocated. The matched route's template (each route is
// named by it) goes to the instrumentation, its variables to the handlers
// as the request's path values (http.Request.PathValue).
type Router struct {
	routes *mux.Router
}

func (rt *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var match mux.RouteMatch
	if !rt.routes.Match(req, &match) { // never: NotFoundHandler is set
		rt.routes.NotFoundHandler.ServeHTTP(w, req)
		return
	}
	if match.MatchErr == nil && match.Route != nil {
		setRoute(req.Context(), match.Route.GetName())
		for name, value := range match.Vars {
			req.SetPathValue(name, value) // read with req.PathValue: no copy of the request
		}
	}
	match.Handler.ServeHTTP(w, req)
}

// NewRouter builds the API's routes. Unknown paths and methods answer with
// the same Error body as everything else.
func NewRouter(p RouterParams) *Router {
	r := mux.NewRouter()
	// Do not 301-redirect unclean paths such as //plants: a redirected POST
	// is not what a client of this API expects; it is simply not a route.
	r.SkipClean(true)
	authorize := p.Authorize
	if authorize == nil {
		authorize = func(s auth.Scope) func(http.Handler) http.Handler { return auth.Require(s, nil) }
	}
	limit := p.Limit
	if limit == nil {
		limit = func(h http.Handler) http.Handler { return h }
	}
	// Each operation names the scope it needs, here beside its route
	// (api/openapi.yaml declares the same): authentication, the scope, then
	// the client's rate limit.
	guard := func(scope auth.Scope, h http.Handler) http.Handler {
		return p.Authenticate(identify(authorize(scope)(limit(h))))
	}
	r.Handle("/plants", guard(auth.ScopeRead, p.ListPlants)).Methods(http.MethodGet).Name("/plants")
	r.Handle("/plants", guard(auth.ScopeWrite, p.CreatePlant)).Methods(http.MethodPost).Name("/plants")
	r.Handle("/plants/{id}", guard(auth.ScopeRead, p.GetPlant)).Methods(http.MethodGet).Name("/plants/{id}")
	r.Handle("/plants/{id}", guard(auth.ScopeWrite, p.DeletePlant)).Methods(http.MethodDelete).Name("/plants/{id}")
	r.Handle("/openapi.yaml", p.OpenAPI).Methods(http.MethodGet, http.MethodHead).Name("/openapi.yaml")
	if p.Docs != nil {
		r.Handle(docspage.Path, p.Docs).Methods(http.MethodGet, http.MethodHead).Name(docspage.Path)
		r.Handle(docspage.Path+"/{file}", p.Docs).Methods(http.MethodGet, http.MethodHead).Name(docspage.Path + "/{file}")
	}

	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		apierror.Write(w, apierror.New(apierror.NotFound, "no such path: see /openapi.yaml for the API"))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		allowed, route := allowedMethods(r, req)
		setRoute(req.Context(), route)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		apierror.Write(w, apierror.New(apierror.MethodNotAllowed,
			"method "+req.Method+" is not allowed on this path; allowed: "+strings.Join(allowed, ", ")))
	})
	return &Router{routes: r}
}

// identify tells the instrumentation who the authenticated client is, for
// the access log, the span and the client label.
func identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := auth.ClientFrom(r.Context()); c != nil {
			setClient(r.Context(), c.Name)
		}
		next.ServeHTTP(w, r)
	})
}

// allowedMethods lists the methods the router would accept for the request's
// path, and the template of the route that has the path; gorilla/mux knows
// them but does not set the Allow header itself.
func allowedMethods(router *mux.Router, req *http.Request) (allowed []string, template string) {
	template = RouteUnmatched
	_ = router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		methods, err := route.GetMethods()
		if err != nil {
			return nil
		}
		for _, m := range methods {
			probe := req.Clone(req.Context())
			probe.Method = m
			var match mux.RouteMatch
			if route.Match(probe, &match) {
				allowed = append(allowed, m)
				template = route.GetName()
			}
		}
		return nil
	})
	return allowed, template
}
