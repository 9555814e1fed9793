package httpapi_test

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
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

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

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

func TestInstrumentationRequestID(t *testing.T) {
	cases := []struct {
		name     string
		incoming []string // X-Request-ID values sent
		keep     bool     // the first is echoed rather than replaced
	}{
		{"none sent", nil, false},
		{"well-formed", []string{"req-42.a_b:c"}, true},
		{"128 characters", []string{strings.Repeat("a", 128)}, true},
		{"129 characters", []string{strings.Repeat("a", 129)}, false},
		{"empty", []string{""}, false},
		{"space", []string{"a b"}, false},
		{"newline forging a log field", []string{"a\nlevel=error"}, false},
		{"quote", []string{`a"b`}, false},
		{"non-ASCII", []string{"idé"}, false},
		{"first of two kept", []string{"first", "second"}, true},
	}
	handler, _, _ := instrumented(t)
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/plants", nil)
			req.Header["X-Request-Id"] = c.incoming
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			got := rec.Header().Values("X-Request-ID")
			if len(got) != 1 {
				t.Fatalf("X-Request-ID answered %q, want one value", got)
			}
			switch {
			case c.keep && got[0] != c.incoming[0]:
				t.Errorf("X-Request-ID %q answered as %q, want it kept", c.incoming[0], got[0])
			case !c.keep && !generatedID.MatchString(got[0]):
				t.Errorf("X-Request-ID %q answered as %q, want 32 generated hex digits", c.incoming, got[0])
			case !c.keep && seen[got[0]]:
				t.Errorf("generated id %q twice", got[0])
			}
			seen[got[0]] = true
		})
	}
}

func TestInstrumentationLabelsAndAccessLine(t *testing.T) {
	handler, reg, logs := instrumented(t)
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
	want := `
# HELP plantstore_http_requests_in_flight Requests being served now.
# TYPE plantstore_http_requests_in_flight gauge
plantstore_http_requests_in_flight 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "plantstore_http_requests_in_flight"); err != nil {
		t.Error(err)
	}
	counts := map[string]int{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "plantstore_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			counts[strings.TrimSpace(key)] = int(m.GetHistogram().GetSampleCount())
		}
	}
	wantCounts := map[string]int{
		"code=200 method=POST route=/plants":        2,
		"code=200 method=GET route=/plants":         1,
		"code=405 method=PUT route=/plants":         1,
		"code=404 method=GET route=/plants/{id}":    1,
		"code=404 method=DELETE route=/plants/{id}": 1,
		"code=404 method=POST route=unmatched":      1,
		"code=405 method=OTHER route=/plants":       1,
	}
	for k, v := range wantCounts {
		if counts[k] != v {
			t.Errorf("series {%s} counted %d, want %d (all: %v)", k, counts[k], v, counts)
		}
	}
	if len(counts) != len(wantCounts) {
		t.Errorf("series %v, want exactly %v", counts, wantCounts)
	}

	lines := logs.FilterMessage("request").All()
	if len(lines) != 8 {
		t.Fatalf("%d access lines, want 8", len(lines))
	}
	first := lines[0].ContextMap()
	for key, want := range map[string]any{
		"method": "POST", "route": "/plants", "path": "/plants", "status": int64(200),
		"bytes": int64(len(`{"name":"x"}`)), "request_id": "fixed-id", "remote_addr": "192.0.2.1:1234",
		"trace_id": "", "span_id": "",
	} {
		if first[key] != want {
			t.Errorf("access line %s = %#v, want %#v", key, first[key], want)
		}
	}
	if lines[0].LoggerName != "access" || lines[0].Caller.Defined {
		t.Errorf("access line from logger %q with caller %v, want logger access without caller", lines[0].LoggerName, lines[0].Caller)
	}
}

// TestInstrumentationTraceAndErrorLines: the access line names the request's
// span, and a 5xx's line is at error level without a stack trace.
func TestInstrumentationTraceAndErrorLines(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core, zap.AddStacktrace(zapcore.ErrorLevel)) // as the service's logger
	in, err := httpapi.NewInstrumentation(prometheus.NewRegistry(), tp, propagation.TraceContext{}, log)
	if err != nil {
		t.Fatal(err)
	}
	handler := in.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	for range 2 {
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/plants", nil))
	}
	ended, lines := spans.Ended(), logs.All()
	if len(ended) != 2 || len(lines) != 2 {
		t.Fatalf("%d spans and %d access lines, want 2 of each", len(ended), len(lines))
	}
	for i, line := range lines {
		fields := line.ContextMap()
		sc := ended[i].SpanContext()
		if fields["trace_id"] != sc.TraceID().String() || fields["span_id"] != sc.SpanID().String() {
			t.Errorf("line %d names trace %v span %v, want %s %s", i, fields["trace_id"], fields["span_id"], sc.TraceID(), sc.SpanID())
		}
		if line.Level != zapcore.ErrorLevel || line.Stack != "" {
			t.Errorf("line %d of a 503 at level %v with stack %q, want error level and no stack", i, line.Level, line.Stack)
		}
	}
}

// TestInstrumentationExemplarsPerBucket: a sampled request leaves its trace
// id as an exemplar on its bucket, but one bucket takes at most one
// exemplar per 100 ms, so that a burst of fast requests costs no exemplar
// work and cannot keep a slow request's bucket from getting its own.
func TestInstrumentationExemplarsPerBucket(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)) // every request sampled
	reg := prometheus.NewRegistry()
	in, err := httpapi.NewInstrumentation(reg, tp, propagation.TraceContext{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	handler := in.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Sleeps well inside one bucket each: 25–50 ms and 250–500 ms.
		if r.URL.Query().Has("slow") {
			time.Sleep(300 * time.Millisecond)
		} else {
			time.Sleep(30 * time.Millisecond)
		}
	}))
	send := func(query string) string {
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/plants"+query, nil))
		ended := spans.Ended()
		return ended[len(ended)-1].SpanContext().TraceID().String()
	}
	// exemplars maps each bucket's upper bound to its exemplar's trace id.
	exemplars := func() map[float64]string {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[float64]string{}
		for _, f := range families {
			if f.GetName() != "plantstore_http_request_duration_seconds" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, b := range m.GetHistogram().GetBucket() {
					for _, l := range b.GetExemplar().GetLabel() {
						if l.GetName() == "trace_id" {
							got[b.GetUpperBound()] = l.GetValue()
						}
					}
				}
			}
		}
		return got
	}

	values := func(m map[float64]string) []string { return slices.Collect(maps.Values(m)) }
	slow := send("?slow")
	start := time.Now()
	first := send("") // another bucket, within 100 ms of the slow exemplar: its own
	got := exemplars()
	if len(got) != 2 || !slices.Contains(values(got), slow) || !slices.Contains(values(got), first) {
		t.Fatalf("exemplars %v, want the slow request's %s and the fast one's %s in their own buckets", got, slow, first)
	}
	second := send("") // the fast bucket again, within 100 ms: no new exemplar
	if got := exemplars(); slices.Contains(values(got), second) && time.Since(start) < 95*time.Millisecond {
		t.Errorf("exemplars %v: the fast bucket took %s within 100 ms of its last", got, second)
	}
	time.Sleep(100 * time.Millisecond)
	again := send("")
	if got := exemplars(); !slices.Contains(values(got), again) {
		t.Errorf("exemplars %v, want the fast bucket's replaced by %s after 100 ms", got, again)
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
