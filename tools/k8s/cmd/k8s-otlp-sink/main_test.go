package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Protobuf encoding helpers for the test's messages.
func varint(v uint64) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func field(num uint64, payload []byte) []byte {
	return append(append(varint(num<<3|2), varint(uint64(len(payload)))...), payload...)
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// span is a Span with the fields around trace_id an exporter sends: span_id
// (2), name (5), start_time_unix_nano (7, fixed64) and kind (6, varint).
func span(traceID []byte) []byte {
	start := append(varint(7<<3|1), 1, 2, 3, 4, 5, 6, 7, 8)
	return concat(field(1, traceID), field(2, bytes.Repeat([]byte{9}, 8)), field(5, []byte("POST /plants")), varint(6<<3), varint(2), start)
}

func request(spans ...[]byte) []byte {
	var ss []byte
	ss = append(ss, field(1, []byte("scope"))...)
	for _, s := range spans {
		ss = append(ss, field(2, s)...)
	}
	resource := field(1, field(1, []byte("service.name")))
	return field(1, concat(resource, field(2, ss)))
}

func TestTraceIDs(t *testing.T) {
	a, _ := hex.DecodeString("0af7651916cd43dd8448eb211c80319c")
	b, _ := hex.DecodeString("4bf92f3577b34da6a3ce929d0e0e4736")
	good := request(span(a), span(b), span(a))
	tests := []struct {
		name    string
		msg     []byte
		want    int
		wantErr bool
	}{
		{"three spans of two traces", good, 3, false},
		{"empty request", nil, 0, false},
		{"truncated", good[:len(good)-3], 0, true},
		{"trace id of 8 bytes", request(span(a[:8])), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, err := traceIDs(tt.msg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if len(ids) != tt.want {
				t.Fatalf("%d ids, want %d", len(ids), tt.want)
			}
			if tt.want > 0 && (!bytes.Equal(ids[0][:], a) || !bytes.Equal(ids[1][:], b)) {
				t.Errorf("ids %x, want %x then %x", ids, a, b)
			}
		})
	}
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
	if c := post(request(span(a)), false); c != 200 {
		t.Fatalf("plain export: %d", c)
	}
	if c := post(request(span(b), span(b)), true); c != 200 {
		t.Fatalf("gzip export: %d", c)
	}
	if c := post([]byte{0x0a, 0x05, 1}, false); c != 400 {
		t.Fatalf("truncated export: %d, want 400", c)
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
