package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/httpapi"
)

// TestInstrumentationServerSpan: each request is one server span, the
// child of an incoming traceparent, named by method and route template
// (by method alone when no route matched), with the HTTP semantic-convention
// attributes; a 5xx marks it as an error.
func TestInstrumentationServerSpan(t *testing.T) {
	const parentTrace, parentSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	cases := []struct {
		name, method, target, host string
		traceparent                string
		wantName                   string
		wantAttrs                  map[attribute.Key]string // absent: ""
		wantStatus                 codes.Code
	}{
		{
			name: "matched route, continuing a trace", method: http.MethodGet, target: "/plants?limit=5", host: "plants.example:8080",
			traceparent: "00-" + parentTrace + "-" + parentSpan + "-01",
			wantName:    "GET /plants",
			wantAttrs: map[attribute.Key]string{
				"http.request.method": "GET", "http.route": "/plants", "url.path": "/plants", "url.scheme": "http",
				"http.response.status_code": "200", "server.address": "plants.example", "server.port": "8080",
				"client.address": "192.0.2.1", "network.peer.address": "192.0.2.1", "network.protocol.version": "1.1",
				"http.request.method_original": "",
			},
			wantStatus: codes.Unset,
		},
		{
			name: "unmatched path", method: http.MethodGet, target: "/no/such/path", host: "plants.example",
			wantName: "GET",
			wantAttrs: map[attribute.Key]string{
				"http.route": "", "http.response.status_code": "404", "server.address": "plants.example", "server.port": "",
			},
			wantStatus: codes.Unset,
		},
		{
			name: "unknown method", method: "BREW", target: "/plants", host: "plants.example",
			wantName: "OTHER /plants",
			wantAttrs: map[attribute.Key]string{
				"http.request.method": "OTHER", "http.request.method_original": "BREW", "http.response.status_code": "405",
			},
			wantStatus: codes.Unset,
		},
		{
			name: "5xx", method: http.MethodPost, target: "/plants", host: "plants.example",
			wantName:   "POST /plants",
			wantAttrs:  map[attribute.Key]string{"http.response.status_code": "503"},
			wantStatus: codes.Error,
		},
	}
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	in, err := httpapi.NewInstrumentation(prometheus.NewRegistry(), tp, propagation.TraceContext{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	handler := in.Wrap(httpapi.NewRouter(httpapi.RouterParams{
		ListPlants: ok, GetPlant: ok, DeletePlant: ok, OpenAPI: ok,
		CreatePlant:  http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }),
		Authenticate: func(next http.Handler) http.Handler { return next },
	}))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.target, nil)
			req.Host = c.host
			if c.traceparent != "" {
				req.Header.Set("traceparent", c.traceparent)
			}
			before := len(spans.Ended())
			handler.ServeHTTP(httptest.NewRecorder(), req)
			ended := spans.Ended()
			if len(ended) != before+1 {
				t.Fatalf("%d spans ended, want 1", len(ended)-before)
			}
			span := ended[len(ended)-1]
			if span.Name() != c.wantName || span.SpanKind() != trace.SpanKindServer {
				t.Errorf("span %q of kind %v, want %q of kind server", span.Name(), span.SpanKind(), c.wantName)
			}
			if c.traceparent != "" && (span.SpanContext().TraceID().String() != parentTrace || span.Parent().SpanID().String() != parentSpan) {
				t.Errorf("span in trace %s under %s, want trace %s under %s", span.SpanContext().TraceID(), span.Parent().SpanID(), parentTrace, parentSpan)
			}
			got := map[attribute.Key]string{}
			for _, a := range span.Attributes() {
				got[a.Key] = a.Value.String()
			}
			for k, want := range c.wantAttrs {
				if got[k] != want {
					t.Errorf("attribute %s = %q, want %q", k, got[k], want)
				}
			}
			if span.Status().Code != c.wantStatus {
				t.Errorf("status %v, want %v", span.Status().Code, c.wantStatus)
			}
		})
	}
}
