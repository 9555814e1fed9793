package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// startServer starts an HTTPServer for handler on a free loopback port and
// shuts it down at the end of the test.
func startServer(t *testing.T, handler http.Handler, o HTTPOptions) *HTTPServer {
	t.Helper()
	s := NewHTTPServer("API", "--http-addr", "127.0.0.1:0", handler, o, zaptest.NewLogger(t))
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello")
	})
}

// noKeepAlive is a client that opens a connection per request, so that each
// request proves the listener still accepts.
func noKeepAlive() *http.Client {
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// refuses reports whether a TCP connection to addr is refused.
func refuses(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

func TestHTTPServerStartBindsSynchronously(t *testing.T) {
	s := NewHTTPServer("API", "--http-addr", "127.0.0.1:0", okHandler(), HTTPOptions{}, zaptest.NewLogger(t))
	if s.Addr() != nil {
		t.Fatalf("Addr before Start = %v, want nil", s.Addr())
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })

	addr := s.Addr()
	if addr == nil {
		t.Fatal("Addr is nil right after Start")
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.Port == 0 || !tcp.IP.IsLoopback() {
		t.Fatalf("Addr = %v, want a bound loopback port", addr)
	}
	// No retry, no sleep: the listener is bound when Start returns.
	status, body := get(t, noKeepAlive(), "http://"+addr.String()+"/")
	if status != http.StatusOK || body != "hello" {
		t.Errorf("GET / = %d %q, want 200 \"hello\"", status, body)
	}
}

func TestHTTPServerStartBusyPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	tests := []struct{ name, flag string }{
		{"API", "--http-addr"},
		{"admin", "--admin-addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewHTTPServer(tt.name, tt.flag, busy.Addr().String(), okHandler(), HTTPOptions{}, zaptest.NewLogger(t))
			err := s.Start(context.Background())
			if err == nil {
				_ = s.Shutdown(context.Background())
				t.Fatal("Start on a busy port succeeded")
			}
			msg := err.Error()
			for _, want := range []string{tt.name, tt.flag, busy.Addr().String(), "address already in use"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
			if !errors.Is(err, syscall.EADDRINUSE) {
				t.Errorf("error %v does not wrap EADDRINUSE", err)
			}
			if s.Addr() != nil {
				t.Errorf("Addr after a failed Start = %v, want nil", s.Addr())
			}
			if err := s.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown after a failed Start: %v", err)
			}
		})
	}
}

// blockingHandler signals entered when a request arrives, then waits for
// release before answering 200.
type blockingHandler struct {
	entered chan struct{}
	release chan struct{}
	exited  chan struct{}
}

func newBlockingHandler() *blockingHandler {
	return &blockingHandler{
		entered: make(chan struct{}),
		release: make(chan struct{}),
		exited:  make(chan struct{}),
	}
}

func (b *blockingHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	defer close(b.exited)
	close(b.entered)
	<-b.release
	_, _ = io.WriteString(w, "finished")
}

type result struct {
	status int
	body   string
	err    error
}

// getAsync issues a GET in the background.
func getAsync(url string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		resp, err := noKeepAlive().Get(url)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		ch <- result{status: resp.StatusCode, body: string(b), err: err}
	}()
	return ch
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestHTTPServerShutdownWaitsForInFlight(t *testing.T) {
	h := newBlockingHandler()
	s := startServer(t, h, HTTPOptions{})
	addr := s.Addr().String()

	resc := getAsync("http://" + addr + "/")
	waitFor(t, h.entered, "the request to reach the handler")

	shutdownErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shutdownErr <- s.Shutdown(ctx)
	}()

	// Shutdown is under way once the listener refuses new connections; it
	// must still be waiting for the handler.
	deadline := time.Now().Add(10 * time.Second)
	for !refuses(addr) {
		if time.Now().After(deadline) {
			t.Fatal("listener still accepts after Shutdown began")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-shutdownErr:
		t.Fatalf("Shutdown returned (%v) while a request was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}

	close(h.release)
	select {
	case err := <-shutdownErr:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return after the handler finished")
	}
	res := <-resc
	if res.err != nil || res.status != http.StatusOK || res.body != "finished" {
		t.Errorf("in-flight request = %d %q %v, want 200 \"finished\"", res.status, res.body, res.err)
	}
}

func TestHTTPServerShutdownExpiredContext(t *testing.T) {
	h := newBlockingHandler()
	s := startServer(t, h, HTTPOptions{})
	t.Cleanup(func() {
		close(h.release)
		<-h.exited
	})
	addr := s.Addr().String()

	resc := getAsync("http://" + addr + "/")
	waitFor(t, h.entered, "the request to reach the handler")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Shutdown(ctx)
	if err == nil {
		t.Fatal("Shutdown with an expired context returned nil while a request was in flight")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap the context's error", err)
	}
	if !strings.Contains(err.Error(), "API") {
		t.Errorf("error %q does not name the server", err)
	}

	// The connection was closed under the blocked handler: the client fails
	// rather than waiting for it.
	select {
	case res := <-resc:
		if res.err == nil {
			t.Errorf("client got %d %q, want a connection error", res.status, res.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("client still waiting: the connection was not closed")
	}
	if !refuses(addr) {
		t.Error("listener still accepts after Shutdown")
	}
}

func TestHTTPServerShutdownBeforeStart(t *testing.T) {
	s := NewHTTPServer("API", "--http-addr", "127.0.0.1:0", okHandler(), HTTPOptions{}, zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []context.Context{context.Background(), ctx} {
		if err := s.Shutdown(c); err != nil {
			t.Errorf("Shutdown before Start: %v", err)
		}
	}
}

func TestHTTPServerOptionsApplied(t *testing.T) {
	o := HTTPOptions{
		ReadHeaderTimeout: 1 * time.Second,
		ReadTimeout:       2 * time.Second,
		WriteTimeout:      3 * time.Second,
		IdleTimeout:       4 * time.Second,
		MaxHeaderBytes:    5000,
	}
	s := NewHTTPServer("API", "--http-addr", "127.0.0.1:0", okHandler(), o, zaptest.NewLogger(t))
	got := HTTPOptions{
		ReadHeaderTimeout: s.srv.ReadHeaderTimeout,
		ReadTimeout:       s.srv.ReadTimeout,
		WriteTimeout:      s.srv.WriteTimeout,
		IdleTimeout:       s.srv.IdleTimeout,
		MaxHeaderBytes:    s.srv.MaxHeaderBytes,
	}
	if got != o {
		t.Errorf("http.Server options = %+v, want %+v", got, o)
	}
}

func TestHTTPServerReadHeaderTimeout(t *testing.T) {
	tests := []struct {
		name       string
		timeout    time.Duration
		wait       time.Duration // how long the client waits for the server
		wantClosed bool
	}{
		{"100ms closes a slow header", 100 * time.Millisecond, 5 * time.Second, true},
		// Control: without the option the server keeps waiting.
		{"unset keeps waiting", 0, 300 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, okHandler(), HTTPOptions{ReadHeaderTimeout: tt.timeout})
			conn, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// A header block that never ends.
			if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: example\r\nX-Slow: "); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(tt.wait))
			n, err := conn.Read(make([]byte, 512))
			var ne net.Error
			timedOut := errors.As(err, &ne) && ne.Timeout()
			switch {
			case tt.wantClosed && timedOut:
				t.Fatalf("connection still open after %v with ReadHeaderTimeout %v", tt.wait, tt.timeout)
			case tt.wantClosed && n > 0:
				t.Fatalf("server sent %d bytes, want it to close the connection", n)
			case tt.wantClosed && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET):
				t.Fatalf("read = %v, want EOF or reset", err)
			case !tt.wantClosed && !timedOut:
				t.Fatalf("read = %d bytes, %v; want the connection left open", n, err)
			}
		})
	}
}

func TestHTTPServerMaxHeaderBytes(t *testing.T) {
	const limit = 1 << 10
	// net/http allows 4096 bytes over MaxHeaderBytes before refusing.
	const slack = 4096
	tests := []struct {
		name   string
		size   int
		status int
	}{
		{"under the limit", limit / 2, http.StatusOK},
		{"well over the limit", limit + slack + 1024, http.StatusRequestHeaderFieldsTooLarge},
	}
	s := startServer(t, okHandler(), HTTPOptions{MaxHeaderBytes: limit, ReadHeaderTimeout: 5 * time.Second})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			req := "GET / HTTP/1.1\r\nHost: example\r\nX-Big: " + strings.Repeat("a", tt.size) + "\r\nConnection: close\r\n\r\n"
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("reading the response: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
}

// TestHTTPServerClosesAfterChunkedBody sends a request framed both by
// Content-Length and by chunked Transfer-Encoding, followed on the same
// connection by a second request: net/http reads the body as chunked, and
// the server must then close the connection (RFC 9112 section 6.3) rather
// than serve the bytes after the chunked body as a request of their own. A
// plain keep-alive request still gets a second request served.
func TestHTTPServerClosesAfterChunkedBody(t *testing.T) {
	var served []string
	var mu sync.Mutex
	s := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		served = append(served, r.URL.Path)
		mu.Unlock()
	}), HTTPOptions{ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second})
	send := func(raw string) (responses int) {
		t.Helper()
		br := bufio.NewReader(bytes.NewReader(rawExchange(t, s.Addr().String(), raw)))
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return responses
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			responses++
		}
	}
	smuggled := "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, first := range []string{
		"POST /chunked HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
	} {
		if n := send(first + smuggled); n != 1 {
			t.Errorf("%d responses to %q followed by a second request, want 1", n, first)
		}
	}
	if n := send("POST /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}" + smuggled); n != 2 {
		t.Errorf("%d responses to two keep-alive requests, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(served, " ") != "/chunked /chunked /plain /smuggled" {
		t.Errorf("served %v, want /chunked /chunked /plain /smuggled", served)
	}
}

// TestHTTPServerRefusesWithoutServerErrors sends the requests net/http
// refuses itself with a 5xx (an unknown Transfer-Encoding: 501; an HTTP
// version it does not speak: 505) and checks the client gets a 400 instead,
// the connection closed, the handler never run; a normal request on the same
// server still works.
func TestHTTPServerRefusesWithoutServerErrors(t *testing.T) {
	handled := 0
	var mu sync.Mutex
	s := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		handled++
		mu.Unlock()
		_, _ = io.WriteString(w, "hello")
	}), HTTPOptions{ReadHeaderTimeout: 5 * time.Second})
	exchange := func(raw string) string {
		t.Helper()
		return string(rawExchange(t, s.Addr().String(), raw))
	}
	for _, raw := range []string{
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n",
		"GET / HTTP/2.0\r\nHost: x\r\n\r\n",
		"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
	} {
		got := exchange(raw)
		if !strings.HasPrefix(got, "HTTP/1.1 400 Bad Request") || !strings.Contains(got, "Connection: close\r\n") {
			t.Errorf("%q: answered %q, want net/http's 400 refusal", raw, got)
		}
	}
	if got := exchange("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 200 OK") || !strings.HasSuffix(got, "hello") {
		t.Errorf("a normal request answered %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if handled != 1 {
		t.Errorf("the handler ran %d times, want once (for the normal request)", handled)
	}
}

// TestHTTPServerShutdownRefusesReconnects: once a response tells its client
// to reconnect (every response during a shutdown says "Connection: close"),
// the listener already refuses the reconnection. Were it still open, the
// dial would wait in the accept queue of a listener about to close and be
// reset after its request went out, a request the client cannot safely
// retry; TestChaosSIGTERM (internal/chaos) saw such a reset under load.
func TestHTTPServerShutdownRefusesReconnects(t *testing.T) {
	for range 20 {
		s := startServer(t, okHandler(), HTTPOptions{})
		addr := s.Addr().String()
		// Two idle connections kept for four clients: the others dial
		// afresh all the time, as they would have to during a shutdown.
		transport := &http.Transport{MaxIdleConnsPerHost: 2}
		client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					resp, err := client.Get("http://" + addr + "/")
					if err != nil {
						return // refused: shut down
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.Close {
						if !refuses(addr) {
							t.Errorf("a response said Connection: close while the listener still accepted")
						}
						return
					}
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done <- s.Shutdown(ctx)
		}()
		wg.Wait()
		// A connection the transport dialled but never used counts as
		// active to net/http for 5 s; close those from this side.
		transport.CloseIdleConnections()
		if err := <-done; err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
}

// rawExchange sends raw bytes on a new connection to addr, half-closes it
// (so that the server reads on through anything behind a request) and
// returns all the server wrote until it closed, or for at most 5 seconds.
func rawExchange(t *testing.T, addr, raw string) []byte {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(conn)
	return b
}

// TestHTTPServerShutdownSparesIdleConnectionsInUse: a kept-alive connection
// that is idle when Shutdown begins, however long, is not closed under its
// client at once: a request sent on it shortly after is answered, with "Connection: close",
// and only then does the connection end. Closing it at once (what net/http's
// Shutdown does) fails such a request with EOF or a reset, which a client
// cannot safely retry for a POST.
func TestHTTPServerShutdownSparesIdleConnectionsInUse(t *testing.T) {
	s := startServer(t, okHandler(), HTTPOptions{})
	addr := s.Addr().String()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	exchange := func() (*http.Response, error) {
		req := "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
		if _, err := io.WriteString(conn, req); err != nil {
			return nil, err
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, nil
	}
	if resp, err := exchange(); err != nil || resp.Close {
		t.Fatalf("before Shutdown: %v (close %v), want a kept-alive 200", err, resp != nil && resp.Close)
	}
	// Left unused for longer than the grace before the drain, as a client
	// leaves the spare connections of its pool: it falls back on them when
	// the drain closes its busy ones.
	time.Sleep(idleGrace + 100*time.Millisecond)

	shutdownErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdownErr <- s.Shutdown(ctx)
	}()
	for !refuses(addr) {
		time.Sleep(5 * time.Millisecond)
	}
	// Well within idleGrace of its last use: the connection is still open.
	time.Sleep(idleGrace / 5)
	resp, err := exchange()
	if err != nil {
		t.Fatalf("a request on a kept-alive connection during Shutdown: %v, want it answered", err)
	}
	if resp.StatusCode != http.StatusOK || !resp.Close {
		t.Errorf("during Shutdown: %d, close %v; want 200 with Connection: close", resp.StatusCode, resp.Close)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("after the closing response: read %d bytes, %v; want EOF", n, err)
	}
	if err := <-shutdownErr; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestHTTPServerShutdownClosesUnusedConnections: a connection its client
// leaves idle does not hold Shutdown beyond idleGrace.
func TestHTTPServerShutdownClosesUnusedConnections(t *testing.T) {
	s := startServer(t, okHandler(), HTTPOptions{})
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	if status, _ := get(t, client, "http://"+s.Addr().String()+"/"); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	// Generous: the bound checked is "ends", not how fast.
	ctx, cancel := context.WithTimeout(context.Background(), 10*idleGrace)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with an idle kept-alive connection: %v, want it closed once idle for %v", err, idleGrace)
	}
}

func TestConnTrackerSettled(t *testing.T) {
	now := time.Now()
	a, b := &net.TCPConn{}, &net.TCPConn{}
	tests := []struct {
		name     string
		conns    map[net.Conn]connState
		drainAgo time.Duration // 0: the drain began long ago
		want     bool
	}{
		{name: "no connections", want: true},
		{name: "idle long enough", conns: map[net.Conn]connState{a: {http.StateIdle, now.Add(-idleGrace)}}, want: true},
		{name: "new long enough", conns: map[net.Conn]connState{a: {http.StateNew, now.Add(-2 * idleGrace)}}, want: true},
		{name: "idle just now", conns: map[net.Conn]connState{a: {http.StateIdle, now.Add(-idleGrace / 2)}}},
		{name: "active for long", conns: map[net.Conn]connState{a: {http.StateActive, now.Add(-time.Hour)}}},
		{name: "one of two still recent", conns: map[net.Conn]connState{
			a: {http.StateIdle, now.Add(-time.Hour)}, b: {http.StateIdle, now}}},
		{name: "idle for an hour, drain began just now", conns: map[net.Conn]connState{a: {http.StateIdle, now.Add(-time.Hour)}}, drainAgo: idleGrace / 2},
		{name: "idle for an hour, drain began a grace ago", conns: map[net.Conn]connState{a: {http.StateIdle, now.Add(-time.Hour)}}, drainAgo: idleGrace, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := trackerOf(tt.conns)
			drainStart := time.Time{}
			if tt.drainAgo > 0 {
				drainStart = now.Add(-tt.drainAgo)
			}
			if got := c.settled(now, drainStart, idleGrace); got != tt.want {
				t.Errorf("settled = %v, want %v", got, tt.want)
			}
		})
	}
}

// snapshot returns the tracked connections' states.
func (c *connTracker) snapshot() map[net.Conn]connState {
	out := make(map[net.Conn]connState)
	c.conns.Range(func(k, v any) bool {
		out[k.(net.Conn)] = c.load(v.(*connRecord))
		return true
	})
	return out
}

// trackerOf is a tracker that knows conns.
func trackerOf(conns map[net.Conn]connState) *connTracker {
	c := newConnTracker()
	for conn, cs := range conns {
		r := c.newRecord(cs.state)
		r.since.Store(int64(cs.since.Sub(c.epoch)))
		c.conns.Store(conn, r)
	}
	return c
}

func TestConnTrackerForgetsClosedAndHijacked(t *testing.T) {
	c := newConnTracker()
	a, b := &net.TCPConn{}, &net.TCPConn{}
	c.track(a, http.StateNew)
	c.track(b, http.StateActive)
	c.track(a, http.StateClosed)
	c.track(b, http.StateHijacked)
	if got := c.snapshot(); len(got) != 0 {
		t.Errorf("tracked after close and hijack: %v", got)
	}
}

// TestConnTrackerFollowsStates: a connection's state is its last one, and
// its time is when it opened or last went idle; going active leaves the time
// alone (an active connection is never settled).
func TestConnTrackerFollowsStates(t *testing.T) {
	c := newConnTracker()
	conn := &net.TCPConn{}
	stateAt := func(step string, want http.ConnState, notBefore, notAfter time.Time) {
		t.Helper()
		cs, ok := c.snapshot()[conn]
		if !ok {
			t.Fatalf("%s: not tracked", step)
		}
		if cs.state != want {
			t.Errorf("%s: state %v, want %v", step, cs.state, want)
		}
		if cs.since.Before(notBefore) || cs.since.After(notAfter) {
			t.Errorf("%s: since %v, want within [%v, %v]", step, cs.since, notBefore, notAfter)
		}
	}
	before := time.Now()
	c.track(conn, http.StateNew)
	opened := time.Now()
	stateAt("new", http.StateNew, before, opened)
	c.track(conn, http.StateActive)
	stateAt("active", http.StateActive, before, opened)
	if c.settled(opened.Add(time.Hour), time.Time{}, idleGrace) {
		t.Error("settled with the connection active")
	}
	idleFrom := time.Now()
	c.track(conn, http.StateIdle)
	stateAt("idle", http.StateIdle, idleFrom, time.Now())
	if c.settled(idleFrom, time.Time{}, idleGrace) {
		t.Error("settled with the connection idle just now")
	}
	if !c.settled(time.Now().Add(idleGrace), time.Time{}, idleGrace) {
		t.Error("not settled with the connection idle for the grace")
	}
	// A state change without StateNew first (not net/http's order) is
	// tracked all the same.
	other := &net.TCPConn{}
	c.track(other, http.StateIdle)
	if _, ok := c.snapshot()[other]; !ok {
		t.Error("a connection first seen idle is not tracked")
	}
}

// TestConnTrackerNotSettledWithUnreadBytes: a connection net/http counts as
// idle while a request already waits in its receive buffer (this process was
// stalled) is not closed.
func TestConnTrackerNotSettledWithUnreadBytes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	now := time.Now()
	c := trackerOf(map[net.Conn]connState{server: {http.StateIdle, now.Add(-time.Hour)}})
	if !c.settled(now, time.Time{}, idleGrace) {
		t.Fatal("an idle connection with nothing to read is not settled")
	}
	const req = "POST /plants HTTP/1.1\r\nHost: x\r\n\r\n"
	if _, err := io.WriteString(client, req); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, ok := pendingBytes(server); ok && n == len(req) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("pendingBytes = %d, %v; want %d, true", n, ok, len(req))
		}
		time.Sleep(time.Millisecond)
	}
	if c.settled(now, time.Time{}, idleGrace) {
		t.Error("settled with a request waiting unread: closing now would cut it")
	}
	if _, err := io.ReadFull(server, make([]byte, len(req))); err != nil {
		t.Fatal(err)
	}
	if !c.settled(now, time.Time{}, idleGrace) {
		t.Error("not settled once the bytes were read")
	}
}

// BenchmarkConnTracker is net/http's two state changes a request (active,
// idle), from as many connections as goroutines.
func BenchmarkConnTracker(b *testing.B) {
	c := newConnTracker()
	b.RunParallel(func(pb *testing.PB) {
		conn := &net.TCPConn{}
		c.track(conn, http.StateNew)
		for pb.Next() {
			c.track(conn, http.StateActive)
			c.track(conn, http.StateIdle)
		}
		c.track(conn, http.StateClosed)
	})
}
