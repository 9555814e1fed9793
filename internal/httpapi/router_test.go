package httpapi_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/httpapi"
)

// spyRouter is the router around handlers that only count their calls, and an
// authentication middleware that lets requests through or rejects them.
type spyRouter struct {
	handler      http.Handler
	authCalls    atomic.Int32
	createCalls  atomic.Int32
	listCalls    atomic.Int32
	getCalls     atomic.Int32
	deleteCalls  atomic.Int32
	openAPICalls atomic.Int32
}

func newSpyRouter(reject bool) *spyRouter {
	s := &spyRouter{}
	create := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.createCalls.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	openAPI := httpapi.NewOpenAPIHandler(api.OpenAPI)
	auth := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.authCalls.Add(1)
			if reject {
				w.Header().Set("WWW-Authenticate", `Bearer realm="plantstore"`)
				apierror.Write(w, apierror.New(apierror.CredentialsMissing, "credentials missing"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	spy := func(calls *atomic.Int32) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(http.StatusNoContent)
		})
	}
	s.handler = httpapi.NewRouter(httpapi.RouterParams{
		CreatePlant: create,
		ListPlants:  spy(&s.listCalls),
		GetPlant:    spy(&s.getCalls),
		DeletePlant: spy(&s.deleteCalls),
		OpenAPI: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.openAPICalls.Add(1)
			openAPI.ServeHTTP(w, r)
		}),
		Authenticate: auth,
	})
	return s
}

func (s *spyRouter) serve(method, target string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(`{"id":1,"name":"a"}`))
	r.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, r)
	return rec
}

func TestRouterNotFound(t *testing.T) {
	paths := []string{
		"/",
		"/plants/",
		"//plants",
		"/plants//",
		"/plants/1/",
		"/plants/1/x",
		"/PLANTS",
		"/Plants",
		"/plant",
		"/plantsx",
		"/v1/plants",
		"/openapi.yaml/",
		"/OPENAPI.YAML",
		"/openapi.json",
		"/./plants",
		"/x/../plants",
		"/plants%2F",
	}
	for _, path := range paths {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			t.Run(method+" "+path, func(t *testing.T) {
				s := newSpyRouter(false)
				rec := s.serve(method, path)
				msg := checkRecError(t, rec, http.StatusNotFound, apierror.NotFound)
				if !strings.Contains(msg, "path") {
					t.Errorf("message %q does not say the path is unknown", msg)
				}
				if rec.Header().Get("Location") != "" {
					t.Errorf("redirected to %q; unknown paths are not redirected", rec.Header().Get("Location"))
				}
				if rec.Header().Get("Allow") != "" {
					t.Errorf("Allow = %q on a 404", rec.Header().Get("Allow"))
				}
				if n := s.handlerCalls(); n != 0 {
					t.Errorf("a handler ran %d times", n)
				}
			})
		}
	}
}

func (s *spyRouter) handlerCalls() int32 {
	return s.createCalls.Load() + s.listCalls.Load() + s.getCalls.Load() + s.deleteCalls.Load() + s.openAPICalls.Load()
}

// TestRouterRoutes: each operation of contract section 9 reaches its own
// handler, through authentication.
func TestRouterRoutes(t *testing.T) {
	for _, tt := range []struct {
		method, path string
		calls        func(*spyRouter) int32
	}{
		{http.MethodPost, "/plants", func(s *spyRouter) int32 { return s.createCalls.Load() }},
		{http.MethodGet, "/plants", func(s *spyRouter) int32 { return s.listCalls.Load() }},
		{http.MethodGet, "/plants?limit=5&cursor=x", func(s *spyRouter) int32 { return s.listCalls.Load() }},
		{http.MethodGet, "/plants/7", func(s *spyRouter) int32 { return s.getCalls.Load() }},
		{http.MethodGet, "/plants/not-a-number", func(s *spyRouter) int32 { return s.getCalls.Load() }},
		{http.MethodDelete, "/plants/-7", func(s *spyRouter) int32 { return s.deleteCalls.Load() }},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			s := newSpyRouter(false)
			if rec := s.serve(tt.method, tt.path); rec.Code != http.StatusNoContent {
				t.Fatalf("status %d, want the spy's 204", rec.Code)
			}
			if tt.calls(s) != 1 || s.handlerCalls() != 1 || s.authCalls.Load() != 1 {
				t.Fatalf("own handler %d, all handlers %d, auth %d calls; want 1 each", tt.calls(s), s.handlerCalls(), s.authCalls.Load())
			}
			rejecting := newSpyRouter(true)
			if rec := rejecting.serve(tt.method, tt.path); rec.Code != http.StatusUnauthorized || rejecting.handlerCalls() != 0 {
				t.Fatalf("with authentication refusing: %d and %d handler calls; want 401 and none", rec.Code, rejecting.handlerCalls())
			}
		})
	}
}

func TestRouterMethodNotAllowed(t *testing.T) {
	tests := []struct {
		method, path, allow string
	}{
		{http.MethodPut, "/plants", "GET, POST"},
		{http.MethodDelete, "/plants", "GET, POST"},
		{http.MethodHead, "/plants", "GET, POST"},
		{http.MethodOptions, "/plants", "GET, POST"},
		{http.MethodPatch, "/plants", "GET, POST"},
		{"PROPFIND", "/plants", "GET, POST"},
		{http.MethodPost, "/plants/1", "GET, DELETE"},
		{http.MethodPut, "/plants/1", "GET, DELETE"},
		{http.MethodPatch, "/plants/-1", "GET, DELETE"},
		{http.MethodHead, "/plants/x", "GET, DELETE"},
		{http.MethodPost, "/openapi.yaml", "GET, HEAD"},
		{http.MethodPut, "/openapi.yaml", "GET, HEAD"},
		{http.MethodDelete, "/openapi.yaml", "GET, HEAD"},
		{http.MethodOptions, "/openapi.yaml", "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			s := newSpyRouter(false)
			rec := s.serve(tt.method, tt.path)
			msg := checkRecError(t, rec, http.StatusMethodNotAllowed, apierror.MethodNotAllowed)
			if got := rec.Header().Values("Allow"); len(got) != 1 || got[0] != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
			if !strings.Contains(msg, tt.method) || !strings.Contains(msg, tt.allow) {
				t.Errorf("message %q does not name the method %s and the allowed %s", msg, tt.method, tt.allow)
			}
			if n := s.handlerCalls(); n != 0 {
				t.Errorf("a handler ran %d times", n)
			}
		})
	}
}

func TestRouterOpenAPI(t *testing.T) {
	onDisk, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(api.OpenAPI, onDisk) {
		t.Fatal("the embedded document differs from api/openapi.yaml")
	}
	// make version-set keeps info.version equal to the release's VERSION.
	release, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if want := "version: " + string(bytes.TrimSpace(release)); !bytes.Contains(api.OpenAPI, []byte(want)) {
		t.Errorf("the document does not carry %q", want)
	}

	// The authentication middleware rejects everything: the document is
	// served without it.
	s := newSpyRouter(true)
	rec := s.serve(http.MethodGet, "/openapi.yaml")
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 (body %s)", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("Content-Type = %q, want application/yaml", ct)
	}
	if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
	}
	if !bytes.Equal(rec.Body.Bytes(), api.OpenAPI) {
		t.Errorf("body (%d bytes) is not the embedded document (%d bytes)", rec.Body.Len(), len(api.OpenAPI))
	}
	if cl := rec.Header().Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(api.OpenAPI)) {
		t.Errorf("Content-Length = %s, want %d", cl, len(api.OpenAPI))
	}
	if n := s.authCalls.Load(); n != 0 {
		t.Errorf("authentication ran %d times for the OpenAPI document, want 0", n)
	}

	rec = s.serve(http.MethodHead, "/openapi.yaml")
	if rec.Code != http.StatusOK {
		t.Errorf("HEAD: status = %d, want 200", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("HEAD: Content-Type = %q, want application/yaml", ct)
	}
	if rec.Body.Len() != 0 {
		t.Errorf("HEAD: body of %d bytes, want none", rec.Body.Len())
	}
	if n := s.authCalls.Load(); n != 0 {
		t.Errorf("authentication ran %d times for HEAD, want 0", n)
	}
}

// TestRouterOpenAPIConditionalHeaders: request headers that ask for part of
// the document or set a precondition never turn GET /openapi.yaml into a
// failure without the contract's Error body (every failure has one). A
// success is the document, whole (200) or in part (206), or 304.
func TestRouterOpenAPIConditionalHeaders(t *testing.T) {
	tests := []struct{ header, value string }{
		{"Range", "bytes=999999-"},
		{"Range", "bytes=0-9"},
		{"Range", "bytes=x"},
		{"Range", "bytes=5-1"},
		{"If-Range", `"x"`},
		{"If-Match", `"nope"`},
		{"If-Unmodified-Since", "Mon, 02 Jan 2006 15:04:05 GMT"},
		{"If-None-Match", "*"},
		{"If-Modified-Since", "Mon, 02 Jan 2006 15:04:05 GMT"},
	}
	for _, tt := range tests {
		t.Run(tt.header+": "+tt.value, func(t *testing.T) {
			s := newSpyRouter(true)
			r := httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil)
			r.Header.Set(tt.header, tt.value)
			rec := httptest.NewRecorder()
			s.handler.ServeHTTP(rec, r)
			switch {
			case rec.Code == http.StatusOK:
				if !bytes.Equal(rec.Body.Bytes(), api.OpenAPI) {
					t.Errorf("200 with a body (%d bytes) that is not the whole document", rec.Body.Len())
				}
			case rec.Code == http.StatusPartialContent:
				if !bytes.Contains(api.OpenAPI, rec.Body.Bytes()) || rec.Body.Len() == 0 {
					t.Errorf("206 with a body that is not part of the document: %q", rec.Body)
				}
			case rec.Code == http.StatusNotModified:
			case rec.Code >= 400:
				checkRecError(t, rec, rec.Code, apierror.Code(rec.Code*100+1))
			default:
				t.Errorf("status = %d", rec.Code)
			}
		})
	}
}

func TestRouterPlantsIsAuthenticated(t *testing.T) {
	s := newSpyRouter(true)
	rec := s.serve(http.MethodPost, "/plants")
	checkRecError(t, rec, http.StatusUnauthorized, apierror.CredentialsMissing)
	if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="plantstore"` {
		t.Errorf("WWW-Authenticate = %q", got)
	}
	if n := s.authCalls.Load(); n != 1 {
		t.Errorf("authentication ran %d times, want 1", n)
	}
	if n := s.createCalls.Load(); n != 0 {
		t.Errorf("the create handler ran %d times behind a rejecting middleware", n)
	}

	s = newSpyRouter(false)
	rec = s.serve(http.MethodPost, "/plants")
	if rec.Code != http.StatusNoContent {
		t.Errorf("status = %d, want the spy handler's 204", rec.Code)
	}
	if a, c := s.authCalls.Load(), s.createCalls.Load(); a != 1 || c != 1 {
		t.Errorf("authentication ran %d times and the handler %d times, want 1 and 1", a, c)
	}
}

// TestRouterQueryDoesNotChangeTheRoute: a query string is not part of the
// path.
func TestRouterQueryDoesNotChangeTheRoute(t *testing.T) {
	s := newSpyRouter(false)
	if rec := s.serve(http.MethodPost, "/plants?x=1"); rec.Code != http.StatusNoContent {
		t.Errorf("POST /plants?x=1: status = %d, want 204", rec.Code)
	}
	if rec := s.serve(http.MethodGet, "/openapi.yaml?v=1"); rec.Code != http.StatusOK {
		t.Errorf("GET /openapi.yaml?v=1: status = %d, want 200", rec.Code)
	}
}

// TestRouterWholeStack: the real create handler behind the router, over a
// real connection, with a 404 and a 405 for good measure.
func TestRouterWholeStack(t *testing.T) {
	h := newHarness(t, &fakeStore{})
	srv := httptest.NewServer(h.handler)
	defer srv.Close()

	res, err := srv.Client().Post(srv.URL+"/plants", "application/json", strings.NewReader(`{"id":1,"name":"a","tag":"t"}`))
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, res)
	if res.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"name":"a","tag":"t"}` {
		t.Errorf("POST /plants: %d %s", res.StatusCode, body)
	}

	req, err := http.NewRequest(http.MethodPut, srv.URL+"/plants", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	checkError(t, res.StatusCode, res.Header, readAll(t, res), 405, apierror.MethodNotAllowed)
	if got := res.Header.Get("Allow"); got != "GET, POST" {
		t.Errorf("Allow = %q, want GET, POST", got)
	}

	res, err = srv.Client().Post(srv.URL+"//plants", "application/json", strings.NewReader(`{"id":1,"name":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	checkError(t, res.StatusCode, res.Header, readAll(t, res), 404, apierror.NotFound)

	res, err = srv.Client().Head(srv.URL + "/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	if res.StatusCode != 200 || res.ContentLength != int64(len(api.OpenAPI)) {
		t.Errorf("HEAD /openapi.yaml: %d, Content-Length %d, want 200, %d", res.StatusCode, res.ContentLength, len(api.OpenAPI))
	}
}

func readAll(t *testing.T, res *http.Response) []byte {
	t.Helper()
	defer res.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRouterScopes: each operation requires its scope of the contract
// (plants:read for GET, plants:write for POST and DELETE); a token without
// it gets 403 40301 naming the scope, and the handler is not called.
func TestRouterScopes(t *testing.T) {
	router, calls := scopedRouter(t)
	ops := []struct{ method, path, scope string }{
		{http.MethodGet, "/plants", "plants:read"},
		{http.MethodGet, "/plants/7", "plants:read"},
		{http.MethodPost, "/plants", "plants:write"},
		{http.MethodDelete, "/plants/7", "plants:write"},
	}
	for _, op := range ops {
		for _, token := range []string{"reader", "writer", "both"} {
			calls.Store(0)
			r := httptest.NewRequest(op.method, op.path, strings.NewReader(`{"id":1,"name":"a"}`))
			r.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			router.ServeHTTP(rec, r)
			allowed := token == "both" || op.scope == "plants:read" && token == "reader" || op.scope == "plants:write" && token == "writer"
			name := op.method + " " + op.path + " as " + token
			if allowed {
				if rec.Code != http.StatusNoContent || calls.Load() != 1 {
					t.Errorf("%s: %d, %d calls; want it served", name, rec.Code, calls.Load())
				}
				continue
			}
			want := `Bearer realm="plantstore", error="insufficient_scope", scope="` + op.scope + `"`
			if rec.Code != http.StatusForbidden || rec.Header().Get("WWW-Authenticate") != want || calls.Load() != 0 {
				t.Errorf("%s: %d %q, %d calls; want 403 %s", name, rec.Code, rec.Header().Get("WWW-Authenticate"), calls.Load(), want)
			}
			if !strings.Contains(rec.Body.String(), `"error":40301`) {
				t.Errorf("%s: body %s", name, rec.Body)
			}
		}
	}
	rec := httptest.NewRecorder()
	router.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/openapi.yaml without a token: %d, want 200", rec.Code)
	}
}

// scopedRouter is the router with the real bearer middleware over tokens
// "reader" (plants:read), "writer" (plants:write) and "both" (a 1.0.0 line:
// every scope), and operations that only count their calls and answer 204.
func scopedRouter(t *testing.T) (*httpapi.Router, *atomic.Int32) {
	t.Helper()
	set, err := auth.ParseTokens(strings.NewReader("reader name=r scopes=plants:read\nwriter name=w scopes=plants:write\nboth\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	calls := new(atomic.Int32)
	spy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	return httpapi.NewRouter(httpapi.RouterParams{
		CreatePlant: spy, ListPlants: spy, GetPlant: spy, DeletePlant: spy,
		OpenAPI:      httpapi.NewOpenAPIHandler(api.OpenAPI),
		Docs:         newDocsPage(t),
		Authenticate: auth.Middleware(auth.NewKeyring(set), nil),
	}), calls
}
