// Package otlptest is the OTLP/HTTP trace receiver that stands where a
// user's OpenTelemetry Collector would for the end-to-end and telemetry
// tests, which point the service's exporter at it (the test cluster runs a
// real Collector and Jaeger instead). It decodes every
// export with the OTLP protobuf types (go.opentelemetry.io/proto/otlp), so a
// malformed export is refused as a collector would refuse it. The load
// harness's sink (tools/bench) only counts bytes: decoding costs CPU on the
// machine that measures the service (BenchmarkHandler).
//
// Only what the service's exporter sends is accepted: POST /v1/traces with
// Content-Type application/x-protobuf, gzip or not. The service does not
// export OTLP/JSON (it refuses OTEL_EXPORTER_OTLP_PROTOCOL=http/json), so
// neither does this receiver accept it.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Path is where exporters send traces: the OTLP/HTTP default.
const Path = "/v1/traces"

// maxBody bounds an export, sent and unpacked; the SDK's batches are far
// smaller.
const maxBody = 64 << 20

// Export is one decoded export request.
type Export struct {
	Request *coltracepb.ExportTraceServiceRequest
	// Body is the protobuf message as decoded (after gzip), for tests that
	// look for a text anywhere in what left the process.
	Body []byte
	// WireBytes is the request body's size as sent (before gunzip).
	WireBytes int64
}

// Spans is every span of the export, each with its resource and scope.
func (e Export) Spans() []Span {
	var out []Span
	for _, rs := range e.Request.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				out = append(out, Span{Span: sp, Resource: rs.GetResource(), Scope: ss.GetScope()})
			}
		}
	}
	return out
}

// Refusal is an export the receiver answered with an error status.
type Refusal struct {
	Status int
	Err    error
}

func (r Refusal) Error() string {
	return fmt.Sprintf("%d %s: %v", r.Status, http.StatusText(r.Status), r.Err)
}

// Handler serves OTLP/HTTP trace exports: each decoded export goes to
// accept, then the exporter gets an empty ExportTraceServiceResponse. A
// request it cannot take is answered 4xx and, when refused is not nil,
// reported to it. accept and refused may be called concurrently.
func Handler(accept func(Export), refused func(Refusal)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, status, err := decode(w, r)
		if err != nil {
			if refused != nil {
				refused(Refusal{Status: status, Err: err})
			}
			http.Error(w, err.Error(), status)
			return
		}
		accept(e)
		out, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
}

// decode reads one export; on failure it returns the status to answer.
func decode(w http.ResponseWriter, r *http.Request) (Export, int, error) {
	if r.URL.Path != Path {
		return Export{}, http.StatusNotFound, fmt.Errorf("%s %s: traces go to POST %s", r.Method, r.URL.Path, Path)
	}
	if r.Method != http.MethodPost {
		return Export{}, http.StatusMethodNotAllowed, fmt.Errorf("%s %s: traces go to POST %s", r.Method, r.URL.Path, Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return Export{}, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q, want application/x-protobuf", ct)
	}
	wire := &countingReader{r: http.MaxBytesReader(w, r.Body, maxBody)}
	var body io.Reader = wire
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return Export{}, http.StatusBadRequest, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		body = zr
	default:
		return Export{}, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Encoding %q, want gzip or none", enc)
	}
	raw, err := io.ReadAll(io.LimitReader(body, maxBody+1))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return Export{}, http.StatusRequestEntityTooLarge, err
		}
		return Export{}, http.StatusBadRequest, fmt.Errorf("reading the body: %w", err)
	}
	if len(raw) > maxBody {
		return Export{}, http.StatusRequestEntityTooLarge, fmt.Errorf("export larger than %d bytes unpacked", maxBody)
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(raw, req); err != nil {
		return Export{}, http.StatusBadRequest, fmt.Errorf("decoding ExportTraceServiceRequest: %w", err)
	}
	e := Export{Request: req, Body: raw, WireBytes: wire.n}
	for _, s := range e.Spans() {
		if err := validIDs(s.Span); err != nil {
			return Export{}, http.StatusBadRequest, fmt.Errorf("span %q: %w", s.GetName(), err)
		}
	}
	return e, 0, nil
}

// validIDs refuses what a collector refuses: ids of the wrong length.
func validIDs(s *tracepb.Span) error {
	switch {
	case len(s.GetTraceId()) != 16:
		return fmt.Errorf("trace_id of %d bytes, want 16", len(s.GetTraceId()))
	case len(s.GetSpanId()) != 8:
		return fmt.Errorf("span_id of %d bytes, want 8", len(s.GetSpanId()))
	case len(s.GetParentSpanId()) != 0 && len(s.GetParentSpanId()) != 8:
		return fmt.Errorf("parent_span_id of %d bytes, want 8 or none", len(s.GetParentSpanId()))
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Span is one received span with the resource and scope it was exported
// with; the OTLP message's fields (name, kind, attributes, links, events,
// status) are its own.
type Span struct {
	*tracepb.Span
	Resource *resourcepb.Resource
	Scope    *commonpb.InstrumentationScope
}

func (s Span) TraceID() string      { return hex.EncodeToString(s.GetTraceId()) }
func (s Span) SpanID() string       { return hex.EncodeToString(s.GetSpanId()) }
func (s Span) ParentSpanID() string { return hex.EncodeToString(s.GetParentSpanId()) }

// Attr returns the span attribute key, as text.
func (s Span) Attr(key string) (string, bool) { return findAttr(s.GetAttributes(), key) }

// ResourceAttr returns the resource attribute key, as text.
func (s Span) ResourceAttr(key string) (string, bool) {
	return findAttr(s.Resource.GetAttributes(), key)
}

// InTrace returns the spans of one trace (32 hex digits).
func InTrace(spans []Span, traceID string) []Span {
	var out []Span
	for _, s := range spans {
		if s.TraceID() == traceID {
			out = append(out, s)
		}
	}
	return out
}

func findAttr(kvs []*commonpb.KeyValue, key string) (string, bool) {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return ValueString(kv.GetValue()), true
		}
	}
	return "", false
}
