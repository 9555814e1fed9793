package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// serverSpans make each request's server span with the OpenTelemetry API
// rather than with otelhttp, which computes the request's attributes and
// metrics up front even for a span that is not sampled: here an unsampled
// request pays for one non-recording span, and a sampled one gets the HTTP
// semantic-convention attributes otelhttp would set (docs/performance.md).
type serverSpans struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
	// attrs recycles annotate's attribute buffers (*spanAttrBuf): a buffer
	// on annotate's stack escapes, SetAttributes being an interface call.
	// Spans copy the attributes they are given, so a buffer is free again
	// once SetAttributes returns.
	attrs sync.Pool
}

// annotate names a recording span by route and gives it the HTTP server
// semantic-convention attributes, in one call (each call takes the span's
// lock); a 5xx marks it as an error.
func (ss *serverSpans) annotate(span trace.Span, r *http.Request, method, route, name, client string, rec *responseRecorder) {
	buf, _ := ss.attrs.Get().(*spanAttrBuf)
	if buf == nil {
		buf = new(spanAttrBuf)
	}
	defer ss.attrs.Put(buf)
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
