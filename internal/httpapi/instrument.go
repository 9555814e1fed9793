package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// RouteUnmatched is the route label of requests that match no route, so that
// random paths cannot grow the number of series.
const RouteUnmatched = "unmatched"

// ClientUnauthenticated is the client label of requests without an
// authenticated client (refused credentials, /openapi.yaml, unknown paths).
const ClientUnauthenticated = "unauthenticated"

// Instrumentation observes every request three ways: a server span
// (instrument_span.go), RED metrics labelled by route template and a
// request count by client (instrument_metrics.go, with exemplars throttled
// in instrument_exemplar.go), and one access-log line
// (instrument_accesslog.go). Each request gets an id (instrument_requestid.go).
type Instrumentation struct {
	metrics requestMetrics
	spans   serverSpans
	access  *zap.Logger
}

// NewInstrumentation registers the HTTP metrics on reg. Spans go to tp,
// access-log lines to log.
func NewInstrumentation(reg prometheus.Registerer, tp trace.TracerProvider, prop propagation.TextMapPropagator, log *zap.Logger) (*Instrumentation, error) {
	in := &Instrumentation{
		spans:  serverSpans{provider: tp, propagator: prop},
		access: newAccessLogger(log),
	}
	if err := in.metrics.register(reg); err != nil {
		return nil, err
	}
	return in, nil
}

// Wrap instruments next, which should be the router: the route template is
// known only once it has matched.
func (in *Instrumentation) Wrap(next http.Handler) http.Handler {
	tracer := in.spans.provider.Tracer("github.com/plantstore/plantstore/internal/httpapi")
	serverSpan := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)} // built once: an option allocates
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		in.metrics.inFlight.Inc()
		defer in.metrics.inFlight.Dec()

		method := methodLabel(r.Method)
		ctx := in.spans.propagator.Extract(r.Context(), headerCarrier(r.Header))
		ctx, span := tracer.Start(ctx, method, serverSpan...)
		defer span.End()
		x := newExchange(w, r.Header["X-Request-Id"]) // canonical key: Header.Get would canonicalise, and allocate, every time
		next.ServeHTTP(&x.rec, r.WithContext(context.WithValue(ctx, requestInfoKey{}, &x.info)))
		end := time.Now()
		elapsed := end.Sub(start)

		sc := span.SpanContext()
		client := x.info.client
		if client == "" {
			client = ClientUnauthenticated
		}
		s := in.metrics.seriesOf(method, x.info.route, statusLabel(x.rec.status), client)
		s.requests.Inc()
		if span.IsRecording() {
			in.spans.annotate(span, r, method, x.info.route, s.spanName, x.info.client, &x.rec)
		}
		in.metrics.observe(s, end, elapsed, sc)
		in.logAccess(r, x, client, elapsed, sc)
	})
}

// exchange is the instrumentation's state of one request, in one allocation:
// what the router and handlers tell it, the recording ResponseWriter, and the
// request id with its response header.
type exchange struct {
	info     requestInfo
	rec      responseRecorder
	idHeader [1]string
	idBytes  [32]byte
	traceHex [32]byte
	spanHex  [16]byte
}

// requestInfo travels down the handler chain in the context: the router
// fills in the route and the authenticated client's name, handlers read the
// request id for their own logs.
type requestInfo struct {
	route  string
	client string
	id     string
}

type requestInfoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// setRoute records the matched route template for the instrumentation.
func setRoute(ctx context.Context, route string) {
	if info := infoFrom(ctx); info != nil {
		info.route = route
	}
}

// setClient records the authenticated client's name for the
// instrumentation.
func setClient(ctx context.Context, name string) {
	if info := infoFrom(ctx); info != nil {
		info.client = name
	}
}

// responseRecorder remembers the status and counts the body bytes.
type responseRecorder struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
}

func (r *responseRecorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *responseRecorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (r *responseRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
