package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/httpapi"
)

// instrumented wraps a router whose /plants answers 200 and whose
// other paths are unmatched, the way the service wires it.
func instrumented(t *testing.T) (http.Handler, *prometheus.Registry, *observer.ObservedLogs) {
	t.Helper()
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zapcore.InfoLevel)
	in, err := httpapi.NewInstrumentation(reg, noop.NewTracerProvider(), propagation.TraceContext{}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	router := httpapi.NewRouter(httpapi.RouterParams{
		CreatePlant: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"name":"x"}`))
		}),
		ListPlants:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`[]`)) }),
		GetPlant:     http.NotFoundHandler(),
		DeletePlant:  http.NotFoundHandler(),
		OpenAPI:      http.NotFoundHandler(),
		Authenticate: func(next http.Handler) http.Handler { return next },
	})
	return in.Wrap(router), reg, logs
}

// serveSamples sends handler one request of each kind the labels tell
// apart: a matched route with and without a query, a wrong method, an
// unknown path and an unknown method, each with X-Request-ID fixed-id.
func serveSamples(handler http.Handler) {
	for _, r := range []struct{ method, target string }{
		{http.MethodPost, "/plants"},
		{http.MethodPost, "/plants?x=1"},
		{http.MethodGet, "/plants"},
		{http.MethodPut, "/plants"},
		{http.MethodGet, "/plants/12345"},
		{http.MethodDelete, "/plants/-9"},
		{http.MethodPost, "/no/such/path"},
		{"BREW", "/plants"},
	} {
		req := httptest.NewRequest(r.method, r.target, nil)
		req.Header.Set("X-Request-ID", "fixed-id")
		handler.ServeHTTP(httptest.NewRecorder(), req)
	}
}

// TestInstrumentationClient: the authenticated client's name, never its
// token, is on the access line, on the server span as enduser.id and in the
// client label of plantstore_http_requests_total; a request without an
// accepted token is "unauthenticated", with no enduser.id.
func TestInstrumentationClient(t *testing.T) {
	const token = "s3cret-token-of-the-reader"
	set, err := auth.ParseTokens(strings.NewReader(token+" name=reader scopes=plants:read\nother-token\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zapcore.InfoLevel)
	in, err := httpapi.NewInstrumentation(reg, tp, propagation.TraceContext{}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	handler := in.Wrap(httpapi.NewRouter(httpapi.RouterParams{
		CreatePlant: ok, ListPlants: ok, GetPlant: ok, DeletePlant: ok, OpenAPI: ok,
		Authenticate: auth.Middleware(auth.NewKeyring(set), nil),
	}))
	for _, r := range []struct{ method, target, token string }{
		{http.MethodGet, "/plants", token},
		{http.MethodGet, "/plants/1", token},
		{http.MethodPost, "/plants", token}, // 403: no plants:write
		{http.MethodPost, "/plants", "other-token"},
		{http.MethodGet, "/plants", "wrong-token"},
		{http.MethodGet, "/openapi.yaml", ""},
	} {
		req := httptest.NewRequest(r.method, r.target, nil)
		if r.token != "" {
			req.Header.Set("Authorization", "Bearer "+r.token)
		}
		handler.ServeHTTP(httptest.NewRecorder(), req)
	}
	want := `
# HELP plantstore_http_requests_total API requests by method, route template, status code and client: the name= of the token's line in the tokens file, "unnamed" without one, "unauthenticated" without an accepted token.
# TYPE plantstore_http_requests_total counter
plantstore_http_requests_total{client="reader",code="204",method="GET",route="/plants"} 1
plantstore_http_requests_total{client="reader",code="204",method="GET",route="/plants/{id}"} 1
plantstore_http_requests_total{client="reader",code="403",method="POST",route="/plants"} 1
plantstore_http_requests_total{client="unnamed",code="204",method="POST",route="/plants"} 1
plantstore_http_requests_total{client="unauthenticated",code="401",method="GET",route="/plants"} 1
plantstore_http_requests_total{client="unauthenticated",code="204",method="GET",route="/openapi.yaml"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "plantstore_http_requests_total"); err != nil {
		t.Error(err)
	}
	wantClients := []string{"reader", "reader", "reader", "unnamed", "unauthenticated", "unauthenticated"}
	lines, ended := logs.FilterMessage("request").All(), spans.Ended()
	if len(lines) != len(wantClients) || len(ended) != len(wantClients) {
		t.Fatalf("%d access lines and %d spans, want %d", len(lines), len(ended), len(wantClients))
	}
	for i, want := range wantClients {
		if got := lines[i].ContextMap()["client"]; got != want {
			t.Errorf("access line %d: client %v, want %s", i, got, want)
		}
		var enduser string
		for _, a := range ended[i].Attributes() {
			if a.Key == "enduser.id" {
				enduser = a.Value.AsString()
			}
			if strings.Contains(a.Value.String(), token) {
				t.Errorf("span %d attribute %s holds the token", i, a.Key)
			}
		}
		if wantID := map[bool]string{true: "", false: want}[want == "unauthenticated"]; enduser != wantID {
			t.Errorf("span %d: enduser.id %q, want %q", i, enduser, wantID)
		}
		for k, v := range lines[i].ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, token) {
				t.Errorf("access line %d field %s holds the token", i, k)
			}
		}
	}
}
