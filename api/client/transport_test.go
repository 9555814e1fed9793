package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blackholeProxy forwards TCP connections to a backend until freeze: from
// then on the connections it holds carry nothing either way and are never
// closed, as when the peer's node is gone; new connections are forwarded
// again (to the peer that is left). With lag set, every byte is delivered
// that long after it arrived, as on a path, or between peers, starved of
// CPU.
type blackholeProxy struct {
	addr    string
	frozen  atomic.Bool
	lag     atomic.Int64 // time.Duration
	accepts atomic.Int32
	mu      sync.Mutex
	held    []net.Conn
}

func newBlackholeProxy(t *testing.T, backend string) *blackholeProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blackholeProxy{addr: l.Addr().String()}
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.held {
			c.Close()
		}
	})
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			p.accepts.Add(1)
			out, err := net.Dial("tcp", backend)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.held = append(p.held, in, out)
			p.mu.Unlock()
			frozen := p.frozen.Load()
			go p.pipe(out, in, frozen)
			go p.pipe(in, out, frozen)
		}
	}()
	return p
}

// pipe copies until the proxy freezes, if the connection is older than the
// freeze; then it swallows what arrives. Each read is written lag after it
// arrived, in order.
func (p *blackholeProxy) pipe(dst, src net.Conn, bornFrozen bool) {
	type chunk struct {
		b   []byte
		due time.Time
	}
	chunks := make(chan chunk, 1024)
	go func() {
		for c := range chunks {
			time.Sleep(time.Until(c.due))
			if _, err := dst.Write(c.b); err != nil {
				return
			}
		}
	}()
	defer close(chunks)
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		if !bornFrozen && p.frozen.Load() {
			continue
		}
		chunks <- chunk{buf[:n], time.Now().Add(time.Duration(p.lag.Load()))}
	}
}

// proxiedClient is a client over NewTransport to an HTTP/2 TLS server
// answering every create with a plant (before, before calls hold), through
// a blackholeProxy; opts come after its HTTP client, whose per-attempt
// timeout (a minute) outlasts the tests' deadlines.
func proxiedClient(t *testing.T, before func(*http.Request), opts ...Option) (*PlantStore, *blackholeProxy) {
	t.Helper()
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		before(r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":10,"name":"Monstera","tag":"tropical"}`)
	}))
	backend.EnableHTTP2 = true
	backend.StartTLS()
	t.Cleanup(backend.Close)
	proxy := newBlackholeProxy(t, backend.Listener.Addr().String())

	roots := x509.NewCertPool()
	roots.AddCert(backend.Certificate())
	tr := NewTransport()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := New("https://"+proxy.addr, "token", append([]Option{WithHTTPDoer(&http.Client{Transport: tr, Timeout: time.Minute})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, proxy
}

// TestDefaultTransportLeavesAVanishedPeer: an HTTP/2 connection whose peer
// stops answering (a Gateway replica on a node that died) is found dead by
// the transport's health check and closed, so the retry of a create dials
// anew and succeeds. Without the health check every attempt would wait on
// the dead connection until the context's deadline.
func TestDefaultTransportLeavesAVanishedPeer(t *testing.T) {
	var protos sync.Map
	// Only the health check can free a request: the per-attempt timeout
	// outlasts the test's deadline.
	c, proxy := proxiedClient(t, func(r *http.Request) { protos.Store(r.Proto, true) })
	if err := createOp.call(t.Context(), c); err != nil {
		t.Fatalf("create before the peer vanished: %v", err)
	}
	if _, ok := protos.Load("HTTP/2.0"); !ok {
		t.Fatal("the create did not use HTTP/2: the test shows nothing")
	}

	proxy.frozen.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := createOp.call(ctx, c); err != nil {
		t.Fatalf("create after the peer vanished: %v after %v (the dead connection was kept)", err, time.Since(start))
	}
	if n := proxy.accepts.Load(); n != 2 {
		t.Errorf("%d connections dialled, want 2 (the first, then one after the health check closed it)", n)
	}
	t.Logf("the create succeeded %v after the peer vanished", time.Since(start).Round(100*time.Millisecond))
}

// TestDefaultTransportKeepsASlowPeer: a live peer, or a caller, starved of
// CPU answers a ping late. Here every byte takes 1.5 s each way while the
// server holds a create 4 s, so the connection is silent, pinged, and the
// answer comes 3 s later: the connection is kept and the create answered
// (a 2 s ping timeout closed it, failing every request in flight on it).
func TestDefaultTransportKeepsASlowPeer(t *testing.T) {
	var hold atomic.Bool
	// No retries: the first attempt's fate is the transport's.
	c, proxy := proxiedClient(t, func(*http.Request) {
		if hold.Load() {
			time.Sleep(4 * time.Second)
		}
	}, WithRetries(1))
	if err := createOp.call(t.Context(), c); err != nil {
		t.Fatalf("create before the lag: %v", err)
	}
	hold.Store(true)
	proxy.lag.Store(int64(1500 * time.Millisecond))
	start := time.Now()
	if err := createOp.call(t.Context(), c); err != nil {
		t.Fatalf("create over the slow path: %v after %v (a live connection closed)", err, time.Since(start))
	}
	if n := proxy.accepts.Load(); n != 1 {
		t.Errorf("%d connections dialled, want 1: the slow peer's connection was left", n)
	}
	t.Logf("the create answered %v after it was sent", time.Since(start).Round(100*time.Millisecond))
}

// TestNewUsesTheHealthCheckedTransport: New's default HTTP client is the one
// NewTransport describes, with a connect timeout and HTTP/2 health checks.
func TestNewUsesTheHealthCheckedTransport(t *testing.T) {
	c, err := New("https://plants.example", "token")
	if err != nil {
		t.Fatal(err)
	}
	hc, ok := c.http.(*http.Client)
	if !ok {
		t.Fatalf("default doer %T, want *http.Client", c.http)
	}
	tr, ok := hc.Transport.(*http.Transport)
	if !ok || tr.HTTP2 == nil || tr.HTTP2.SendPingTimeout <= 0 || tr.HTTP2.PingTimeout <= 0 {
		t.Fatalf("default transport %#v: want HTTP/2 health checks", hc.Transport)
	}
	if hc.Timeout != 30*time.Second || !tr.ForceAttemptHTTP2 || tr.Proxy == nil {
		t.Errorf("default client: timeout %v, HTTP/2 %v, proxy from the environment %v", hc.Timeout, tr.ForceAttemptHTTP2, tr.Proxy != nil)
	}
}
