package httpapi

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/plantstore/plantstore/internal/telemetry"
)

// RouteUnmatched is the route label of requests that match no route, so that
// random paths cannot grow the number of series.
const RouteUnmatched = "unmatched"

// ClientUnauthenticated is the client label of requests without an
// authenticated client (refused credentials, /openapi.yaml, unknown paths).
const ClientUnauthenticated = "unauthenticated"

// Instrumentation observes every request three ways: a server span, RED
// metrics labelled by route template (and a request count by client), and
// one access-log line.
type Instrumentation struct {
	duration   *prometheus.HistogramVec
	requests   *prometheus.CounterVec
	buckets    []float64
	inFlight   prometheus.Gauge
	access     *zap.Logger
	tracer     trace.TracerProvider
	propagator propagation.TextMapPropagator
	// series holds each labelled child of duration once looked up
	// (seriesKey → *series): the vector's own lookup hashes and compares
	// the label values on every request.
	series sync.Map
	// spanAttrs recycles annotate's attribute buffers (*spanAttrBuf). A
	// buffer on annotate's stack escapes, SetAttributes being an interface
	// call: 896 bytes allocated per sampled request. Spans copy the
	// attributes they are given, so a buffer is free again once
	// SetAttributes returns.
	spanAttrs sync.Pool
}

// exemplarInterval is the least time between two exemplars of one bucket of
// one series. Prometheus keeps one exemplar per bucket and scrapes
// every 15 to 60 seconds, so fresher exemplars than this are never seen,
// while each costs the trace id's string, a label map and a protobuf
// message.
const exemplarInterval = 100 * time.Millisecond

// NewInstrumentation registers the HTTP metrics on reg. Spans go to tp,
// access-log lines to log.
func NewInstrumentation(reg prometheus.Registerer, tp trace.TracerProvider, prop propagation.TextMapPropagator, log *zap.Logger) (*Instrumentation, error) {
	buckets := telemetry.DurationBuckets()
	in := &Instrumentation{
		buckets: buckets,
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "plantstore", Subsystem: "http", Name: "request_duration_seconds",
			Help:                            "Time from the request's arrival to the end of its response, by method, route template and status code.",
			Buckets:                         buckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}, []string{"method", "route", "code"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plantstore", Subsystem: "http", Name: "requests_total",
			Help: "API requests by method, route template, status code and client: the name= of the token's line in the tokens file, \"unnamed\" without one, \"unauthenticated\" without an accepted token.",
		}, []string{"method", "route", "code", "client"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "plantstore", Subsystem: "http", Name: "requests_in_flight",
			Help: "Requests being served now.",
		}),
		// The caller would name this file on every line, at a runtime.Caller
		// per request: useless for an access log, and its costliest field.
		// Nor does a 5xx's line need the stack trace an error line gets: it
		// would be the same stack every time, taken at every failed request
		// of an outage.
		access:     log.Named("access").WithOptions(zap.WithCaller(false), zap.AddStacktrace(zapcore.FatalLevel)),
		tracer:     tp,
		propagator: prop,
	}
	for _, c := range []prometheus.Collector{in.duration, in.requests, in.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// Wrap instruments next, which should be the router: the route template is
// known only once it has matched.
//
// The server span is made here with the OpenTelemetry API rather than by
// otelhttp: otelhttp cost about 12µs a request on our machines even when the
// span was not sampled (it computes request attributes and metrics up
// front), more than the rest of the chain. Here an unsampled request pays for
// one non-recording span, and a sampled one gets the HTTP semantic-convention
// attributes otelhttp would set.
func (in *Instrumentation) Wrap(next http.Handler) http.Handler {
	tracer := in.tracer.Tracer("github.com/plantstore/plantstore/internal/httpapi")
	serverSpan := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)} // built once: an option allocates
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		in.inFlight.Inc()
		defer in.inFlight.Dec()

		method := methodLabel(r.Method)
		ctx := in.propagator.Extract(r.Context(), headerCarrier(r.Header))
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
		s := in.seriesOf(method, x.info.route, statusLabel(x.rec.status), client)
		s.requests.Inc()
		if span.IsRecording() {
			in.annotate(span, r, method, x.info.route, s.spanName, x.info.client, &x.rec)
		}
		in.observe(s, end, elapsed, sc)
		in.logAccess(r, x, client, elapsed, sc)
	})
}

// series is one child of the duration histogram, with what a request of its
// labels needs beyond the observer.
type series struct {
	obs      prometheus.Observer
	requests prometheus.Counter
	ex       prometheus.ExemplarObserver // nil if obs keeps no exemplars
	// lastExemplar is, per classic bucket (+Inf last), when it last got an
	// exemplar, in Unix nanoseconds.
	lastExemplar []atomic.Int64
	// spanName is the server span's name, "METHOD /route", built once.
	spanName string
}

type seriesKey struct{ method, route, code, client string }

// seriesOf returns the series of the labels, making it on first use. The
// labels are bounded (methodLabel, the route templates and RouteUnmatched,
// the statuses the API sends, the client names of the tokens file), so the
// cache is too.
func (in *Instrumentation) seriesOf(method, route, code, client string) *series {
	key := seriesKey{method, route, code, client}
	if s, ok := in.series.Load(key); ok {
		return s.(*series)
	}
	s := &series{
		obs:          in.duration.WithLabelValues(method, route, code),
		requests:     in.requests.WithLabelValues(method, route, code, client),
		lastExemplar: make([]atomic.Int64, len(in.buckets)+1),
		spanName:     method + " " + route,
	}
	s.ex, _ = s.obs.(prometheus.ExemplarObserver)
	actual, _ := in.series.LoadOrStore(key, s)
	return actual.(*series)
}

// observe records a request's duration. A sampled request's trace id goes
// with it as an exemplar unless its bucket got one within the last
// exemplarInterval: per bucket, so that a rare slow request still leaves its
// trace next to its bucket however many fast ones are sampled.
func (in *Instrumentation) observe(s *series, end time.Time, elapsed time.Duration, sc trace.SpanContext) {
	v := elapsed.Seconds()
	if s.ex != nil && sc.IsSampled() {
		last := &s.lastExemplar[sort.SearchFloat64s(in.buckets, v)] // the first bucket whose le ≥ v
		now, prev := end.UnixNano(), last.Load()                    // the request's end: no second clock read
		if now-prev >= int64(exemplarInterval) && last.CompareAndSwap(prev, now) {
			s.ex.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	s.obs.Observe(v)
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

// newExchange starts the exchange of a request whose X-Request-ID values are
// incoming, and sets the response's X-Request-ID.
func newExchange(w http.ResponseWriter, incoming []string) *exchange {
	x := &exchange{rec: responseRecorder{ResponseWriter: w, status: http.StatusOK}}
	x.info = requestInfo{route: RouteUnmatched}
	if len(incoming) > 0 && validRequestID(incoming[0]) {
		x.info.id = incoming[0]
	} else {
		newRequestID(&x.idBytes)
		// The bytes live in x and are never written again, so the string
		// can share them instead of copying them into an allocation of its own.
		x.info.id = unsafe.String(&x.idBytes[0], len(x.idBytes))
	}
	x.idHeader[0] = x.info.id
	w.Header()["X-Request-Id"] = x.idHeader[:]
	return x
}

// annotate names a recording span by route and gives it the HTTP server
// semantic-convention attributes, in one call (each call takes the span's
// lock); a 5xx marks it as an error.
func (in *Instrumentation) annotate(span trace.Span, r *http.Request, method, route, name, client string, rec *responseRecorder) {
	buf, _ := in.spanAttrs.Get().(*spanAttrBuf)
	if buf == nil {
		buf = new(spanAttrBuf)
	}
	defer in.spanAttrs.Put(buf)
	attrs := append(buf[:0],
		semconv.HTTPRequestMethodKey.String(method),
		semconv.URLPath(r.URL.Path),
		semconv.URLScheme("http"),
		semconv.HTTPResponseStatusCode(rec.status),
		semconv.HTTPResponseBodySize(int(rec.bytes)),
		semconv.NetworkProtocolVersion(strings.TrimPrefix(r.Proto, "HTTP/")),
		semconv.UserAgentOriginal(truncate(r.UserAgent(), 256)),
	)
	if route != RouteUnmatched {
		span.SetName(name)
		attrs = append(attrs, semconv.HTTPRoute(route))
	}
	if method == "OTHER" {
		attrs = append(attrs, semconv.HTTPRequestMethodOriginal(truncate(r.Method, 32)))
	}
	if client != "" {
		attrs = append(attrs, semconv.EnduserID(client))
	}
	if host, port, err := net.SplitHostPort(r.Host); err == nil {
		attrs = append(attrs, semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, semconv.ServerPort(p))
		}
	} else if r.Host != "" {
		attrs = append(attrs, semconv.ServerAddress(r.Host))
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		attrs = append(attrs, semconv.ClientAddress(ip), semconv.NetworkPeerAddress(ip))
	}
	span.SetAttributes(attrs...)
	clear(attrs) // the pooled buffer keeps no request's strings alive
	if rec.status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(rec.status))
	}
}

// spanAttrBuf holds every attribute annotate sets.
type spanAttrBuf [14]attribute.KeyValue

// logAccess writes the request's access-log line: error level for a 5xx,
// info otherwise.
func (in *Instrumentation) logAccess(r *http.Request, x *exchange, client string, elapsed time.Duration, sc trace.SpanContext) {
	level := zapcore.InfoLevel
	if x.rec.status >= 500 {
		level = zapcore.ErrorLevel
	}
	if ce := in.access.Check(level, "request"); ce != nil {
		ce.Write(
			zap.String("method", r.Method),
			zap.String("route", x.info.route),
			zap.String("path", r.URL.Path),
			zap.Int("status", x.rec.status),
			zap.Duration("duration", elapsed),
			zap.Int64("bytes", x.rec.bytes),
			zap.String("remote_addr", r.RemoteAddr),
			zap.String("user_agent", truncate(r.UserAgent(), 256)),
			zap.String("client", client),
			zap.String("request_id", x.info.id),
			zap.String("trace_id", x.hexTraceID(sc)),
			zap.String("span_id", x.hexSpanID(sc)),
		)
	}
}

// hexTraceID is sc's trace id in hex ("" without one), spelt out in x's own
// buffer rather than in a new string: the access line needs it on every
// request, sampled or not.
func (x *exchange) hexTraceID(sc trace.SpanContext) string {
	if !sc.HasTraceID() {
		return ""
	}
	id := sc.TraceID()
	return hexInto(x.traceHex[:], id[:])
}

// hexSpanID is hexTraceID for the span id.
func (x *exchange) hexSpanID(sc trace.SpanContext) string {
	if !sc.HasSpanID() {
		return ""
	}
	id := sc.SpanID()
	return hexInto(x.spanHex[:], id[:])
}

// hexInto writes id in hex into buf, which must be twice as long and is
// never written again while the string lives, and returns it as a string
// sharing buf's bytes.
func hexInto(buf, id []byte) string {
	hex.Encode(buf, id)
	return unsafe.String(&buf[0], len(buf))
}

// requestInfo travels down the handler chain in the context: the router
// fills in the route and the authenticated client's name, handlers read the
// request id for their own logs.
type requestInfo struct {
	route  string
	client string
	id     string
	vars   map[string]string // the matched route's path variables
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

// logFields correlates a handler's own log lines with the access log and
// the trace.
func logFields(ctx context.Context) []zap.Field {
	var id string
	if info := infoFrom(ctx); info != nil {
		id = info.id
	}
	sc := trace.SpanContextFromContext(ctx)
	return []zap.Field{zap.String("request_id", id), zap.String("trace_id", traceID(sc)), zap.String("span_id", spanID(sc))}
}

// validRequestID tells whether an incoming X-Request-ID is honoured: 1 to
// 128 of letters, digits and -._: (nothing that could forge a log field).
func validRequestID(in string) bool {
	if len(in) == 0 || len(in) > 128 {
		return false
	}
	for i := 0; i < len(in); i++ {
		c := in[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

// newRequestID writes a random request id of 32 hex digits into b.
func newRequestID(b *[32]byte) {
	const hexdigits = "0123456789abcdef"
	hi, lo := rand.Uint64(), rand.Uint64()
	for i := range 16 {
		b[i] = hexdigits[hi>>(60-4*i)&0xf]
		b[16+i] = hexdigits[lo>>(60-4*i)&0xf]
	}
}

// statusLabel is strconv.Itoa without an allocation for the statuses the
// API sends.
func statusLabel(code int) string {
	switch code {
	case 200:
		return "200"
	case 400:
		return "400"
	case 401:
		return "401"
	case 404:
		return "404"
	case 405:
		return "405"
	case 409:
		return "409"
	case 413:
		return "413"
	case 415:
		return "415"
	case 403:
		return "403"
	case 429:
		return "429"
	case 500:
		return "500"
	case 503:
		return "503"
	default:
		return strconv.Itoa(code)
	}
}

// headerCarrier reads propagation headers by their canonical names, sparing
// http.Header.Get the canonicalisation (and allocation) of "traceparent",
// "tracestate" and "baggage" on every request.
type headerCarrier http.Header

func (c headerCarrier) Get(key string) string {
	var v []string
	switch key {
	case "traceparent":
		v = c["Traceparent"]
	case "tracestate":
		v = c["Tracestate"]
	case "baggage":
		v = c["Baggage"]
	default:
		return http.Header(c).Get(key)
	}
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func (c headerCarrier) Set(key, value string) { http.Header(c).Set(key, value) }

func (c headerCarrier) Keys() []string { return propagation.HeaderCarrier(c).Keys() }

// methodLabel bounds the method label: unknown methods count as OTHER.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	default:
		return "OTHER"
	}
}

func traceID(sc trace.SpanContext) string {
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

func spanID(sc trace.SpanContext) string {
	if !sc.HasSpanID() {
		return ""
	}
	return sc.SpanID().String()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
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
