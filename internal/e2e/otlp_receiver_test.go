package e2e

import (
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-process OTLP/HTTP trace receiver, the collector the
// service exports to in these tests: it accepts POST /v1/traces with a
// protobuf body, plain or gzip, and keeps every span it is sent.
type otlpReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	bodies   [][]byte // every decoded request body, for grepping
	spans    []receivedSpan
	problems []string // requests the receiver refused, checked by assertHealthy
}

// receivedSpan is one exported span with what it was exported with.
type receivedSpan struct {
	*tracepb.Span
	Resource []*commonpb.KeyValue
	Scope    *commonpb.InstrumentationScope
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) problem(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.problems = append(r.problems, msg)
	r.mu.Unlock()
	http.Error(w, msg, status)
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.problem(w, http.StatusNotFound, "unexpected %s %s", req.Method, req.URL.Path)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.problem(w, http.StatusUnsupportedMediaType, "Content-Type %q, want application/x-protobuf", ct)
		return
	}
	var body io.Reader = req.Body
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			r.problem(w, http.StatusBadRequest, "gzip: %v", err)
			return
		}
		defer zr.Close()
		body = zr
	default:
		r.problem(w, http.StatusUnsupportedMediaType, "Content-Encoding %q", enc)
		return
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		r.problem(w, http.StatusBadRequest, "reading the body: %v", err)
		return
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &export); err != nil {
		r.problem(w, http.StatusBadRequest, "decoding ExportTraceServiceRequest: %v", err)
		return
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, raw)
	for _, rs := range export.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.spans = append(r.spans, receivedSpan{Span: sp, Resource: rs.GetResource().GetAttributes(), Scope: ss.GetScope()})
			}
		}
	}
	r.mu.Unlock()
	out, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	if err != nil {
		r.problem(w, http.StatusInternalServerError, "encoding the response: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// env is the environment that points the service's tracing at r, sampling
// every trace and exporting within 100ms, with the pod, namespace and node
// as resource attributes (as the chart passes them).
func (r *otlpReceiver) env() []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.srv.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_SAMPLER=parentbased_always_on",
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_RESOURCE_ATTRIBUTES=k8s.pod.name=pod-1,k8s.namespace.name=ns-1,k8s.node.name=node-1",
	}
}

// Spans returns every span received so far.
func (r *otlpReceiver) Spans() []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedSpan(nil), r.spans...)
}

// Bodies returns every decoded export request received so far.
func (r *otlpReceiver) Bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// assertHealthy fails the test if the receiver refused any export.
func (r *otlpReceiver) assertHealthy(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.problems {
		t.Errorf("OTLP receiver refused an export: %s", p)
	}
}

// waitSpans polls until match finds what it wants in the received spans
// and returns them; it fails the test after within.
func (r *otlpReceiver) waitSpans(t *testing.T, within time.Duration, what string, match func([]receivedSpan) bool) []receivedSpan {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		spans := r.Spans()
		if match(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("within %v the receiver did not get %s; it has:\n%s", within, what, describeSpans(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// inTrace returns the spans of one trace.
func inTrace(spans []receivedSpan, traceID string) []receivedSpan {
	var out []receivedSpan
	for _, s := range spans {
		if s.TraceID() == traceID {
			out = append(out, s)
		}
	}
	return out
}

func (s receivedSpan) TraceID() string      { return hex.EncodeToString(s.GetTraceId()) }
func (s receivedSpan) SpanID() string       { return hex.EncodeToString(s.GetSpanId()) }
func (s receivedSpan) ParentSpanID() string { return hex.EncodeToString(s.GetParentSpanId()) }

// Attr returns the span attribute key, as a string.
func (s receivedSpan) Attr(key string) (string, bool) { return findAttr(s.GetAttributes(), key) }

// ResourceAttr returns the resource attribute key, as a string.
func (s receivedSpan) ResourceAttr(key string) (string, bool) { return findAttr(s.Resource, key) }

func findAttr(kvs []*commonpb.KeyValue, key string) (string, bool) {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return anyValueString(kv.GetValue()), true
		}
	}
	return "", false
}

// anyValueString renders an attribute value of any type as text.
func anyValueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BytesValue:
		return string(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyValueString(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *commonpb.AnyValue_KvlistValue:
		parts := make([]string, 0, len(x.KvlistValue.GetValues()))
		for _, kv := range x.KvlistValue.GetValues() {
			parts = append(parts, kv.GetKey()+"="+anyValueString(kv.GetValue()))
		}
		return "{" + strings.Join(parts, ",") + "}"
	default:
		return ""
	}
}

// textOf lists every string a span carries, as "where: text" lines: its
// name, status message, trace state, attribute keys and values, events and
// links with theirs, and its resource's and scope's attributes.
func textOf(s receivedSpan) []string {
	var out []string
	add := func(where string, kvs []*commonpb.KeyValue) {
		for _, kv := range kvs {
			out = append(out, where+" attribute key: "+kv.GetKey(), where+" attribute "+kv.GetKey()+": "+anyValueString(kv.GetValue()))
		}
	}
	out = append(out, "name: "+s.GetName(), "status message: "+s.GetStatus().GetMessage(), "trace state: "+s.GetTraceState())
	add("span", s.GetAttributes())
	for _, e := range s.GetEvents() {
		out = append(out, "event name: "+e.GetName())
		add("event "+e.GetName(), e.GetAttributes())
	}
	for _, l := range s.GetLinks() {
		out = append(out, "link trace state: "+l.GetTraceState())
		add("link", l.GetAttributes())
	}
	add("resource", s.Resource)
	add("scope", s.Scope.GetAttributes())
	return out
}

// describeSpans is a readable listing for failure messages.
func describeSpans(spans []receivedSpan) string {
	if len(spans) == 0 {
		return "  (no spans)"
	}
	lines := make([]string, 0, len(spans))
	for _, s := range spans {
		attrs := make([]string, 0, len(s.GetAttributes()))
		for _, kv := range s.GetAttributes() {
			attrs = append(attrs, kv.GetKey()+"="+anyValueString(kv.GetValue()))
		}
		sort.Strings(attrs)
		lines = append(lines, fmt.Sprintf("  %s trace=%s span=%s parent=%s kind=%v status=%v scope=%s attrs=[%s]",
			s.GetName(), s.TraceID(), s.SpanID(), s.ParentSpanID(), s.GetKind(), s.GetStatus().GetCode(),
			s.Scope.GetName(), strings.Join(attrs, " ")))
	}
	return strings.Join(lines, "\n")
}

// newTraceparent returns a random sampled W3C trace context: the trace id,
// the parent span id and the traceparent header carrying them.
func newTraceparent(t testing.TB) (traceID, spanID, header string) {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	traceID, spanID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	return traceID, spanID, "00-" + traceID + "-" + spanID + "-01"
}

// randomHex returns n random bytes as hex.
func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// containsFold reports whether s contains substr, ignoring case.
func containsFold(s, substr string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(substr))
}
