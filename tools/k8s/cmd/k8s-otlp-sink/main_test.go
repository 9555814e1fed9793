package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// export is an ExportTraceServiceRequest with one span per trace id, as
// the exporter sends it.
func export(t *testing.T, traceIDs ...[]byte) []byte {
	t.Helper()
	var spans []*tracepb.Span
	for _, id := range traceIDs {
		spans = append(spans, &tracepb.Span{TraceId: id, SpanId: bytes.Repeat([]byte{9}, 8), Name: "POST /plants",
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: 1})
	}
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSinkHTTP(t *testing.T) {
	a, _ := hex.DecodeString("0af7651916cd43dd8448eb211c80319c")
	b, _ := hex.DecodeString("4bf92f3577b34da6a3ce929d0e0e4736")
	srv := httptest.NewServer(newSink(10).handler())
	defer srv.Close()
	post := func(body []byte, gz bool) int {
		t.Helper()
		if gz {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			_, _ = zw.Write(body)
			_ = zw.Close()
			body = buf.Bytes()
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/traces", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		if gz {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		return resp.StatusCode, buf.String()
	}
	if c := post(export(t, a), false); c != 200 {
		t.Fatalf("plain export: %d", c)
	}
	if c := post(export(t, b, b), true); c != 200 {
		t.Fatalf("gzip export: %d", c)
	}
	if c := post([]byte{0x0a, 0x05, 1}, false); c != 400 {
		t.Fatalf("truncated export: %d, want 400", c)
	}
	if c := post(export(t, a[:8]), false); c != 400 {
		t.Fatalf("export with a trace id of 8 bytes: %d, want 400", c)
	}
	for _, tt := range []struct {
		path string
		want int
	}{
		{"/traces/0af7651916cd43dd8448eb211c80319c", 200},
		{"/traces/4bf92f3577b34da6a3ce929d0e0e4736", 200},
		{"/traces/00000000000000000000000000000001", 404},
		{"/traces/xyz", 400},
	} {
		if c, _ := get(tt.path); c != tt.want {
			t.Errorf("GET %s: %d, want %d", tt.path, c, tt.want)
		}
	}
	resp, err := http.Post(srv.URL+"/hooks/plantstore", "application/json", strings.NewReader(`{"type":"plant.created"}`))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("webhook delivery: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, body := get("/stats"); strings.TrimSpace(body) != `{"hooks":1,"requests":2,"spans":3,"traces":2}` {
		t.Errorf("stats %s", body)
	}
}

// TestSinkKeepsAtMostMaxTraces: past -max-traces ids are counted, not kept.
func TestSinkKeepsAtMostMaxTraces(t *testing.T) {
	s := newSink(1)
	srv := httptest.NewServer(s.handler())
	defer srv.Close()
	for _, id := range []string{"0af7651916cd43dd8448eb211c80319c", "4bf92f3577b34da6a3ce929d0e0e4736"} {
		b, _ := hex.DecodeString(id)
		resp, err := http.Post(srv.URL+"/v1/traces", "application/x-protobuf", bytes.NewReader(export(t, b)))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("export: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	if len(s.traces) != 1 || s.spans != 2 || s.requests != 2 {
		t.Errorf("kept %d traces of %d spans in %d requests, want 1 of 2 in 2", len(s.traces), s.spans, s.requests)
	}
}
