package httpapi

import (
	"context"
	"encoding/hex"
	"net/http"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newAccessLogger is log for the access lines. The caller would name this
// file on every line, at a runtime.Caller per request: useless for an access
// log, and its costliest field. Nor does a 5xx's line need the stack trace
// an error line gets: it would be the same stack every time, taken at every
// failed request of an outage.
func newAccessLogger(log *zap.Logger) *zap.Logger {
	return log.Named("access").WithOptions(zap.WithCaller(false), zap.AddStacktrace(zapcore.FatalLevel))
}

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
