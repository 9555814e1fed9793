package otlptest

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestRecorderKeepsWhatTheSDKExports sends spans through the SDK's own
// OTLP/HTTP exporter, plain and gzip, and finds every field a test reads.
func TestRecorderKeepsWhatTheSDKExports(t *testing.T) {
	for _, compression := range []otlptracehttp.Compression{otlptracehttp.NoCompression, otlptracehttp.GzipCompression} {
		t.Run(fmt.Sprint("compression ", compression), func(t *testing.T) {
			rec := NewRecorder()
			srv := httptest.NewServer(rec)
			defer srv.Close()
			exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+Path),
				otlptracehttp.WithCompression(compression))
			if err != nil {
				t.Fatal(err)
			}
			res := resource.NewSchemaless(attribute.String("service.name", "otlptest"), attribute.String("k8s.pod.name", "pod-1"))
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
			tracer := tp.Tracer("otlptest-scope")
			ctx, parent := tracer.Start(context.Background(), "parent", trace.WithSpanKind(trace.SpanKindServer))
			_, linked := tracer.Start(context.Background(), "linked")
			linked.End()
			_, child := tracer.Start(ctx, "child", trace.WithLinks(trace.Link{SpanContext: linked.SpanContext()}),
				trace.WithAttributes(attribute.Int("n", 7), attribute.StringSlice("list", []string{"a", "b"})))
			child.AddEvent("happened", trace.WithAttributes(attribute.Bool("ok", true)))
			child.End()
			parent.End()
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}

			spans := rec.WaitSpans(t, 5*time.Second, "three spans", func(s []Span) bool { return len(s) == 3 })
			rec.CheckNoRefusals(t)
			byName := map[string]Span{}
			for _, s := range spans {
				byName[s.GetName()] = s
			}
			p, c, l := byName["parent"], byName["child"], byName["linked"]
			if p.Span == nil || c.Span == nil || l.Span == nil {
				t.Fatalf("spans:\n%s", Describe(spans))
			}
			if p.TraceID() != parent.SpanContext().TraceID().String() || p.SpanID() != parent.SpanContext().SpanID().String() {
				t.Errorf("parent ids %s/%s, want %s/%s", p.TraceID(), p.SpanID(), parent.SpanContext().TraceID(), parent.SpanContext().SpanID())
			}
			if c.ParentSpanID() != p.SpanID() || p.ParentSpanID() != "" || len(InTrace(spans, p.TraceID())) != 2 {
				t.Errorf("child's parent %q, parent's %q; spans:\n%s", c.ParentSpanID(), p.ParentSpanID(), Describe(spans))
			}
			if links := c.GetLinks(); len(links) != 1 || string(links[0].GetSpanId()) != string(l.GetSpanId()) {
				t.Errorf("child's links %v, want one to %s", links, l.SpanID())
			}
			if p.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("parent kind %v", p.GetKind())
			}
			for key, want := range map[string]string{"n": "7", "list": "[a,b]"} {
				if got, ok := c.Attr(key); !ok || got != want {
					t.Errorf("child attribute %s = %q, %v; want %q", key, got, ok, want)
				}
			}
			if got, ok := c.ResourceAttr("k8s.pod.name"); !ok || got != "pod-1" || c.Scope.GetName() != "otlptest-scope" {
				t.Errorf("resource k8s.pod.name %q, scope %q", got, c.Scope.GetName())
			}
			if texts := c.Texts(); !slices.Contains(texts, "event happened attribute ok: true") || !slices.Contains(texts, "resource attribute service.name: otlptest") {
				t.Errorf("texts lack the event's or the resource's attribute: %q", texts)
			}
			if bodies := rec.Bodies(); len(bodies) == 0 || !bytes.Contains(bytes.Join(bodies, nil), []byte("otlptest-scope")) {
				t.Errorf("decoded bodies lack the scope name")
			}
		})
	}
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// exportOf is an export of one span with the given ids.
func exportOf(traceID, spanID, parentID []byte) []byte {
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: traceID, SpanId: spanID, ParentSpanId: parentID, Name: "POST /plants",
			Attributes: []*commonpb.KeyValue{{Key: "k", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "v"}}}},
		}}}},
	}}})
	if err != nil {
		panic(err)
	}
	return b
}

var (
	traceID = bytes.Repeat([]byte{0xab}, 16)
	spanID  = bytes.Repeat([]byte{0xcd}, 8)
)

func TestHandlerAnswersAndRefuses(t *testing.T) {
	good := exportOf(traceID, spanID, nil)
	tests := []struct {
		name, method, path, contentType, encoding string
		body                                      []byte
		want                                      int
	}{
		{name: "plain", body: good, want: 200},
		{name: "gzip", encoding: "gzip", body: gzipped(good), want: 200},
		{name: "identity", encoding: "identity", body: good, want: 200},
		{name: "with a parent", body: exportOf(traceID, spanID, spanID), want: 200},
		{name: "empty export", body: nil, want: 200},
		{name: "other path", path: "/v1/metrics", body: good, want: 404},
		{name: "GET", method: http.MethodGet, want: 405},
		{name: "OTLP/JSON", contentType: "application/json", body: []byte(`{}`), want: 415},
		{name: "brotli", encoding: "br", body: good, want: 415},
		{name: "broken gzip", encoding: "gzip", body: good, want: 400},
		{name: "truncated protobuf", body: good[:len(good)-3], want: 400},
		{name: "trace id of 8 bytes", body: exportOf(traceID[:8], spanID, nil), want: 400},
		{name: "span id of 4 bytes", body: exportOf(traceID, spanID[:4], nil), want: 400},
		{name: "parent id of 3 bytes", body: exportOf(traceID, spanID, spanID[:3]), want: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var accepted []Export
			var refused []Refusal
			h := Handler(func(e Export) { accepted = append(accepted, e) }, func(f Refusal) { refused = append(refused, f) })
			method, path, ct := cmp.Or(tt.method, http.MethodPost), cmp.Or(tt.path, Path), cmp.Or(tt.contentType, "application/x-protobuf")
			req := httptest.NewRequest(method, path, bytes.NewReader(tt.body))
			req.Header.Set("Content-Type", ct)
			if tt.encoding != "" {
				req.Header.Set("Content-Encoding", tt.encoding)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tt.want {
				t.Fatalf("status %d (%s), want %d", w.Code, strings.TrimSpace(w.Body.String()), tt.want)
			}
			if tt.want != 200 {
				if len(accepted) != 0 || len(refused) != 1 || refused[0].Status != tt.want {
					t.Fatalf("accepted %d, refusals %v", len(accepted), refused)
				}
				return
			}
			if len(accepted) != 1 || len(refused) != 0 {
				t.Fatalf("accepted %d, refusals %v", len(accepted), refused)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/x-protobuf" {
				t.Errorf("answer Content-Type %q", ct)
			}
			if err := proto.Unmarshal(w.Body.Bytes(), &coltracepb.ExportTraceServiceResponse{}); err != nil {
				t.Errorf("answer is no ExportTraceServiceResponse: %v", err)
			}
			e := accepted[0]
			if e.WireBytes != int64(len(tt.body)) {
				t.Errorf("WireBytes %d, sent %d", e.WireBytes, len(tt.body))
			}
			if spans := e.Spans(); len(tt.body) > 0 && (len(spans) != 1 || spans[0].TraceID() != strings.Repeat("ab", 16)) {
				t.Errorf("spans:\n%s", Describe(spans))
			}
		})
	}
}

// fakeTB records a check's failures.
type fakeTB struct{ errors, fatals atomic.Int32 }

func (*fakeTB) Helper()                 {}
func (f *fakeTB) Errorf(string, ...any) { f.errors.Add(1) }
func (f *fakeTB) Fatalf(string, ...any) { f.fatals.Add(1) }

func TestRecorderChecksFail(t *testing.T) {
	rec := NewRecorder()
	var tb fakeTB
	start := time.Now()
	if got := rec.WaitSpans(&tb, 50*time.Millisecond, "a span", func(s []Span) bool { return len(s) > 0 }); got != nil || tb.fatals.Load() != 1 {
		t.Fatalf("WaitSpans on an empty receiver: %v, %d fatals", got, tb.fatals.Load())
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Errorf("WaitSpans gave up before its time")
	}
	rec.CheckNoRefusals(&tb)
	if tb.errors.Load() != 0 {
		t.Fatal("CheckNoRefusals failed without a refusal")
	}
	req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	rec.ServeHTTP(httptest.NewRecorder(), req)
	rec.CheckNoRefusals(&tb)
	if tb.errors.Load() != 1 || len(rec.Refusals()) != 1 || len(rec.Spans()) != 0 {
		t.Fatalf("after one refused export: %d errors, refusals %v", tb.errors.Load(), rec.Refusals())
	}
}

func TestValueString(t *testing.T) {
	s := func(v string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
	}
	for _, tt := range []struct {
		v    *commonpb.AnyValue
		want string
	}{
		{s("x"), "x"},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}, "true"},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -3}}, "-3"},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.5}}, "0.5"},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte("raw")}}, "raw"},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{s("a"), s("b")}}}}, "[a,b]"},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{{Key: "k", Value: s("v")}}}}}, "{k=v}"},
		{nil, ""},
	} {
		if got := ValueString(tt.v); got != tt.want {
			t.Errorf("ValueString(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// BenchmarkHandler is the receiver's cost per export of 64 server spans
// (the service's batch size) with the attributes of the service's server
// spans: what decoding every export would take from a machine that
// measures the service.
func BenchmarkHandler(b *testing.B) {
	kv := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	spans := make([]*tracepb.Span, 64)
	for i := range spans {
		spans[i] = &tracepb.Span{
			TraceId: bytes.Repeat([]byte{byte(i + 1)}, 16), SpanId: spanID, ParentSpanId: spanID,
			Name: "POST /plants", Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: 1, EndTimeUnixNano: 2,
			Attributes: []*commonpb.KeyValue{kv("http.request.method", "POST"), kv("url.path", "/plants"),
				kv("http.route", "/plants"), kv("server.address", "127.0.0.1"), kv("network.peer.address", "127.0.0.1"),
				kv("user_agent.original", "bench"), kv("http.response.status_code", "200")},
		}
	}
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	h := Handler(func(Export) {}, nil)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
