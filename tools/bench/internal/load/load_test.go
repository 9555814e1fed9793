package load

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestAppendRequestParses(t *testing.T) {
	raw := AppendRequest(nil, "127.0.0.1:8080", "tok", 42)
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(string(raw))))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(req.Body)
	if req.Method != "POST" || req.URL.Path != "/plants" || req.Header.Get("Authorization") != "Bearer tok" ||
		req.Header.Get("Content-Type") != "application/json" ||
		string(body) != `{"id": 42, "name": "Monstera", "tag": "tropical"}` {
		t.Errorf("request = %s %s %v body %q", req.Method, req.URL, req.Header, body)
	}
	if raw := AppendRequest(nil, "h", "", 1); strings.Contains(string(raw), "Authorization") {
		t.Error("empty token still sends Authorization")
	}
}

func TestReadResponse(t *testing.T) {
	stream := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello" +
		"HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" +
		"HTTP/1.1 204 No Content\r\n\r\n" +
		"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
	br := bufio.NewReader(strings.NewReader(stream))
	for _, want := range []struct {
		status int
		keep   bool
	}{{200, true}, {409, true}, {204, true}, {503, false}} {
		var r Response
		if err := readResponse(br, &r); err != nil || r.Status != want.status || r.Keep != want.keep {
			t.Fatalf("readResponse = %d %v %v, want %d %v", r.Status, r.Keep, err, want.status, want.keep)
		}
	}
	if err := readResponse(bufio.NewReader(strings.NewReader("garbage\r\n\r\n")), &Response{}); err == nil {
		t.Error("garbage: no error")
	}
}

func TestNewTargetLoopbackOnly(t *testing.T) {
	var ids atomic.Int64
	for _, addr := range []string{"10.0.0.1:80", "example.com:80", "192.168.1.1:8080", "0.0.0.0:80", "[::]:8080", "nohost"} {
		if _, err := NewTarget(addr, "", &ids); err == nil {
			t.Errorf("NewTarget(%q) accepted a non-loopback address", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:80", "[::1]:80"} {
		if _, err := NewTarget(addr, "", &ids); err != nil {
			t.Errorf("NewTarget(%q): %v", addr, err)
		}
	}
	if err := Loopback("127.0.0.1:80", "[::1]:9090"); err != nil {
		t.Error(err)
	}
	if Loopback("127.0.0.1:80", "10.1.2.3:80") == nil {
		t.Error("Loopback accepted 10.1.2.3 after a loopback address")
	}
}

// A short closed and open loop against an in-process server: every request
// is answered, ids are fresh, and the open loop keeps its schedule.
func TestLoops(t *testing.T) {
	var ids atomic.Int64
	tg := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"Monstera","tag":"tropical"}`))
	}), &ids)
	ctx := context.Background()
	var started, ended bool
	r, err := tg.Closed(ctx, 4, 50*time.Millisecond, 200*time.Millisecond, func() { started = true }, func() { ended = true })
	if err != nil {
		t.Fatal(err)
	}
	if !started || !ended || r.Requests == 0 || r.Failed() != 0 || r.Statuses[200] == 0 || len(r.Latencies) != int(r.Requests) {
		t.Errorf("closed loop: %+v (hooks %v %v)", r, started, ended)
	}
	before := ids.Load()
	r, err = tg.Open(ctx, 200, 250*time.Millisecond, 50)
	if err != nil {
		t.Fatal(err)
	}
	if r.Scheduled != 50 || r.Requests != 50 || r.Failed() != 0 || ids.Load()-before != 50 {
		t.Errorf("open loop: scheduled %d answered %d failed %d ids %d", r.Scheduled, r.Requests, r.Failed(), ids.Load()-before)
	}
	// Not faster than its schedule (a loop that ignored it would send the
	// 50 in a few milliseconds); no lower bound: a busy machine may be late.
	if tp := r.Throughput(); tp > 250 {
		t.Errorf("open loop at 200/s achieved %.0f/s", tp)
	}
}

func TestResultAdd(t *testing.T) {
	var r Result
	r.Add(Result{Window: time.Second, Requests: 2, Bad: 1, Statuses: map[int]int64{200: 1, 500: 1},
		Latencies: []time.Duration{1, 2}, Scheduled: 3, Lag: []time.Duration{5}, FirstError: "first"})
	r.Add(Result{Window: time.Second, Requests: 1, Errors: 1, Statuses: map[int]int64{200: 1},
		Latencies: []time.Duration{3}, Scheduled: 2, Lag: []time.Duration{6}, FirstError: "second"})
	want := Result{Window: 2 * time.Second, Requests: 3, Bad: 1, Errors: 1, Statuses: map[int]int64{200: 2, 500: 1},
		Latencies: []time.Duration{1, 2, 3}, Scheduled: 5, Lag: []time.Duration{5, 6}, FirstError: "first"}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("merged %+v, want %+v", r, want)
	}
	if got := r.Throughput(); got != 1.5 {
		t.Fatalf("throughput %v, want 1.5", got)
	}
}

// serve serves h on loopback until the test ends, and returns a target of
// it whose creates take their ids from ids.
func serve(t *testing.T, h http.Handler, ids *atomic.Int64) *Target {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tg, err := NewTarget(srv.Listener.Addr().String(), "t", ids)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}
