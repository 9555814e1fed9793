package httpapi

import "github.com/gorilla/mux"

// Route is one method of one route template the router serves.
type Route struct {
	Method string
	Path   string // the template, e.g. /plants/{id}
}

// Routes lists what the router serves, in the order the routes were
// registered: the API reference (docs/api.md) is checked against it.
func (rt *Router) Routes() []Route {
	var routes []Route
	_ = rt.routes.Walk(func(r *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := r.GetPathTemplate()
		if err != nil {
			return nil // no path: not a route of the API
		}
		methods, _ := r.GetMethods()
		for _, m := range methods {
			routes = append(routes, Route{Method: m, Path: path})
		}
		return nil
	})
	return routes
}
