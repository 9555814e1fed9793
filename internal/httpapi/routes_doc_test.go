package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/docgen"
)

// documentedRoute is a row of the route table of docs/api.md.
type documentedRoute struct {
	method, path, scope string
}

// routeTable reads the generated route table of docs/api.md (made from
// api/openapi.yaml by tools/openapi's TestAPIDoc).
func routeTable(t *testing.T) []documentedRoute {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(docgen.Root(t), "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	part, _, err := docgen.Replace(doc, "routes", "")
	if err != nil {
		t.Fatalf("docs/api.md: %v", err)
	}
	lines := strings.Split(part, "\n")
	if len(lines) < 3 {
		t.Fatalf("docs/api.md: the route table has no rows:\n%s", part)
	}
	header := cells(lines[0])
	col := func(name string) int {
		i := slices.Index(header, name)
		if i < 0 {
			t.Fatalf("docs/api.md: the route table has no column %q: %v", name, header)
		}
		return i
	}
	method, path, scope := col("method"), col("path"), col("scope")
	var routes []documentedRoute
	for _, line := range lines[2:] {
		c := cells(line)
		if len(c) != len(header) {
			t.Fatalf("docs/api.md: a route row of %d cells, want %d: %s", len(c), len(header), line)
		}
		routes = append(routes, documentedRoute{c[method], c[path], c[scope]})
	}
	return routes
}

// cells splits a Markdown table row, dropping the backticks of code spans.
func cells(line string) []string {
	parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), "`")
	}
	return parts
}

// TestRouteTableIsTheRouter: the routes docs/api.md lists are those the
// router serves, no more and no fewer (HEAD aside, which the router serves
// beside GET /openapi.yaml and the reference page), and each requires the scope its row names: a
// token with only that scope is served, a token without it is answered 403
// naming it, and a route needing no token is served without one.
func TestRouteTableIsTheRouter(t *testing.T) {
	documented := routeTable(t)
	router, calls := scopedRouter(t)

	var served []string
	for _, r := range router.Routes() {
		if r.Method != http.MethodHead {
			served = append(served, r.Method+" "+r.Path)
		}
	}
	var listed []string
	for _, r := range documented {
		listed = append(listed, r.method+" "+r.path)
	}
	slices.Sort(served)
	slices.Sort(listed)
	if !slices.Equal(served, listed) {
		t.Errorf("docs/api.md lists the routes\n  %s\nthe router serves\n  %s", strings.Join(listed, "\n  "), strings.Join(served, "\n  "))
	}

	tokenWith := map[string]string{"plants:read": "reader", "plants:write": "writer"}
	tokenWithout := map[string]string{"plants:read": "writer", "plants:write": "reader"}
	for _, r := range documented {
		target := strings.NewReplacer("{id}", "7", "{file}", "page.js").Replace(r.path)
		serve := func(token string) *httptest.ResponseRecorder {
			calls.Store(0)
			req := httptest.NewRequest(r.method, target, strings.NewReader(`{"id":7,"name":"a"}`))
			req.Header.Set("Content-Type", "application/json")
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			rec := httptest.NewRecorder()
			router.ServeHTTP(rec, req)
			return rec
		}
		name := r.method + " " + r.path + " (scope " + r.scope + ")"
		if r.scope == "none (no token)" {
			if rec := serve(""); rec.Code != http.StatusOK {
				t.Errorf("%s: without a token %d, want 200", name, rec.Code)
			}
			continue
		}
		with, ok := tokenWith[r.scope]
		if !ok {
			t.Errorf("%s: not a scope the service has", name)
			continue
		}
		if rec := serve(with); rec.Code != http.StatusNoContent || calls.Load() != 1 {
			t.Errorf("%s: a token with only that scope got %d, %d handler calls; want it served", name, rec.Code, calls.Load())
		}
		rec := serve(tokenWithout[r.scope])
		if want := `scope="` + r.scope + `"`; rec.Code != http.StatusForbidden || !strings.Contains(rec.Header().Get("WWW-Authenticate"), want) || calls.Load() != 0 {
			t.Errorf("%s: a token without it got %d %q, %d handler calls; want 403 naming %s", name, rec.Code, rec.Header().Get("WWW-Authenticate"), calls.Load(), want)
		}
	}
}
