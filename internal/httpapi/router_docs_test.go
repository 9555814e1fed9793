package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/docspage"
	"github.com/plantstore/plantstore/internal/httpapi"
)

func newDocsPage(t *testing.T) http.Handler {
	t.Helper()
	page, err := docspage.New()
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// docsRouter is the router with the reference page (docs nil: turned off)
// behind an authentication that refuses every request and counts them.
func docsRouter(docs http.Handler) (http.Handler, *atomic.Int32) {
	authCalls := new(atomic.Int32)
	refuse := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			authCalls.Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer realm="plantstore"`)
			apierror.Write(w, apierror.New(apierror.CredentialsMissing, "credentials missing"))
		})
	}
	noop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return httpapi.NewRouter(httpapi.RouterParams{
		CreatePlant: noop, ListPlants: noop, GetPlant: noop, DeletePlant: noop,
		OpenAPI:      httpapi.NewOpenAPIHandler(api.OpenAPI),
		Docs:         docs,
		Authenticate: refuse,
	}), authCalls
}

func serveRouter(h http.Handler, method, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

// The page and its files need no token (contract section 12, like
// /openapi.yaml), answer GET and HEAD only, and leave the operations
// guarded: POST /plants still needs a token.
func TestRouterDocsPage(t *testing.T) {
	router, authCalls := docsRouter(newDocsPage(t))
	for _, target := range []string{"/docs", "/docs/page.js", "/docs/scalar-api-reference.js"} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			if rec := serveRouter(router, method, target); rec.Code != http.StatusOK || rec.Header().Get("Content-Security-Policy") == "" {
				t.Errorf("%s %s without a token: %d, CSP %q; want 200 with the page's policy", method, target, rec.Code, rec.Header().Get("Content-Security-Policy"))
			}
		}
		rec := serveRouter(router, http.MethodPost, target)
		checkRecError(t, rec, http.StatusMethodNotAllowed, apierror.MethodNotAllowed)
		if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
			t.Errorf("POST %s: Allow %q, want GET, HEAD", target, got)
		}
	}
	if n := authCalls.Load(); n != 0 {
		t.Errorf("authentication ran %d times for the page", n)
	}
	checkRecError(t, serveRouter(router, http.MethodPost, "/plants"), http.StatusUnauthorized, apierror.CredentialsMissing)
	if n := authCalls.Load(); n != 1 {
		t.Errorf("POST /plants: authentication ran %d times, want 1", n)
	}
	for _, target := range []string{"/docs/", "/docs/nope.js", "/docs/page.js/x", "/DOCS", "/docs//page.js"} {
		msg := checkRecError(t, serveRouter(router, http.MethodGet, target), http.StatusNotFound, apierror.NotFound)
		if msg == "" {
			t.Errorf("GET %s: no message", target)
		}
	}
}

// Turned off (--docs-page=false), the page's paths are unknown paths: 404
// with the Error body, as the router answers any other, and not routes.
func TestRouterDocsPageOff(t *testing.T) {
	router, authCalls := docsRouter(nil)
	for _, target := range []string{"/docs", "/docs/page.js", "/docs/scalar-api-reference.js"} {
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
			rec := serveRouter(router, method, target)
			if method == http.MethodHead {
				if rec.Code != http.StatusNotFound {
					t.Errorf("HEAD %s: %d, want 404", target, rec.Code)
				}
				continue
			}
			msg := checkRecError(t, rec, http.StatusNotFound, apierror.NotFound)
			if want := serveRouter(router, method, "/nowhere"); !strings.Contains(msg, "path") || rec.Body.String() != want.Body.String() {
				t.Errorf("%s %s: %s; want the answer of any unknown path, %s", method, target, rec.Body, want.Body)
			}
		}
	}
	if n := authCalls.Load(); n != 0 {
		t.Errorf("authentication ran %d times", n)
	}
	for _, r := range router.(*httpapi.Router).Routes() {
		if strings.HasPrefix(r.Path, "/docs") {
			t.Errorf("the router serves %s %s with the page off", r.Method, r.Path)
		}
	}
}
