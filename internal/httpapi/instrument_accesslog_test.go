package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/internal/httpapi"
)

// TestInstrumentationAccessLine: one line per request, with the request's
// fields, from the access logger, without the caller.
func TestInstrumentationAccessLine(t *testing.T) {
	handler, _, logs := instrumented(t)
	serveSamples(handler)
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
