package server

import (
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

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap/zaptest"
)

// announcer records the calls to Params.Announce.
type announcer struct {
	mu    sync.Mutex
	addrs []string
}

func (a *announcer) announce(addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.addrs = append(a.addrs, addr)
}

func (a *announcer) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.addrs...)
}

func testOptions() Options {
	return Options{
		HTTPAddr:        "127.0.0.1:0",
		AdminAddr:       "127.0.0.1:0",
		HTTP:            HTTPOptions{ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 10 * time.Second},
		ReadyTimeout:    time.Second,
		ShutdownTimeout: 10 * time.Second,
	}
}

// newTestServers wires New onto a test lifecycle. Whatever the test does,
// the listeners are closed when it ends.
func newTestServers(t *testing.T, o Options, a *announcer) (*fxtest.Lifecycle, *Servers) {
	t.Helper()
	lc := fxtest.NewLifecycle(t)
	p := Params{
		Lifecycle: lc,
		Options:   o,
		API: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "api")
		}),
		Store:    &fakePinger{},
		Registry: prometheus.NewRegistry(),
		Log:      zaptest.NewLogger(t),
	}
	if a != nil {
		p.Announce = a.announce
	}
	s := New(p)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.API.Shutdown(ctx)
		_ = s.Admin.Shutdown(ctx)
	})
	return lc, s
}

// status GETs url on a fresh connection and returns the status, or the error.
func status(url string) (int, error) {
	resp, err := noKeepAlive().Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func TestNewStartServesAPIAndAdmin(t *testing.T) {
	a := &announcer{}
	lc, s := newTestServers(t, testOptions(), a)

	if s.Health.started.Load() {
		t.Fatal("Health started before the lifecycle started")
	}
	lc.RequireStart()

	if !s.Health.started.Load() {
		t.Error("Health not started after the lifecycle started")
	}
	apiAddr, adminAddr := s.API.Addr().String(), s.Admin.Addr().String()
	if apiAddr == adminAddr {
		t.Fatalf("API and admin share %s", apiAddr)
	}
	if got := a.calls(); len(got) != 1 || got[0] != apiAddr {
		t.Errorf("Announce calls = %q, want exactly [%q]", got, apiAddr)
	}

	c := noKeepAlive()
	if st, body := get(t, c, "http://"+apiAddr+"/anything"); st != http.StatusOK || body != "api" {
		t.Errorf("API = %d %q, want 200 \"api\"", st, body)
	}
	for _, path := range []string{"/startupz", "/livez", "/readyz"} {
		if st, body := get(t, c, "http://"+adminAddr+path); st != http.StatusOK || strings.TrimSpace(body) != "ok" {
			t.Errorf("admin %s = %d %q, want 200 ok", path, st, body)
		}
	}
	if st, body := get(t, c, "http://"+adminAddr+"/metrics"); st != http.StatusOK || !strings.Contains(body, "promhttp_metric_handler_errors_total") {
		t.Errorf("admin /metrics = %d, body lacks the passed registry's metrics:\n%s", st, body)
	}
	// The probes are not served on the API port.
	if st, _ := get(t, c, "http://"+apiAddr+"/readyz"); st != http.StatusOK {
		t.Errorf("API /readyz = %d, want the API handler's 200", st)
	}
	lc.RequireStop()
}

func TestNewWithoutAnnounce(t *testing.T) {
	lc, s := newTestServers(t, testOptions(), nil)
	lc.RequireStart()
	if st, err := status("http://" + s.API.Addr().String() + "/"); err != nil || st != http.StatusOK {
		t.Errorf("API = %d, %v; want 200", st, err)
	}
	lc.RequireStop()
}

func TestNewStopFailsReadinessBeforeClosingAPI(t *testing.T) {
	const delay = 200 * time.Millisecond
	o := testOptions()
	o.ShutdownDelay = delay
	lc, s := newTestServers(t, o, &announcer{})
	lc.RequireStart()
	apiURL := "http://" + s.API.Addr().String() + "/"
	adminURL := "http://" + s.Admin.Addr().String()

	if st, err := status(adminURL + "/readyz"); err != nil || st != http.StatusOK {
		t.Fatalf("/readyz before Stop = %d, %v; want 200", st, err)
	}

	begin := time.Now()
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stopped <- lc.Stop(ctx)
	}()

	// Wait for readiness to fail; then, within the delay, the API must still
	// accept and answer, and Stop must still be running.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := status(adminURL + "/readyz")
		if err != nil {
			t.Fatalf("admin unreachable while draining: %v", err)
		}
		if st == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz never failed after Stop began")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if st, err := status(apiURL); err != nil || st != http.StatusOK {
		t.Errorf("API during the shutdown delay = %d, %v; want 200: the API closed before readiness failed long enough", st, err)
	}
	for _, path := range []string{"/livez", "/startupz"} {
		if st, err := status(adminURL + path); err != nil || st != http.StatusOK {
			t.Errorf("admin %s while draining = %d, %v; want 200", path, st, err)
		}
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) before the shutdown delay was over", err)
	default:
	}

	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return")
	}
	if took := time.Since(begin); took < delay {
		t.Errorf("Stop took %v, less than the shutdown delay %v", took, delay)
	}
	for name, addr := range map[string]string{"API": s.API.Addr().String(), "admin": s.Admin.Addr().String()} {
		if !refuses(addr) {
			t.Errorf("%s port %s still accepts connections after Stop", name, addr)
		}
	}
}

func TestNewStopContextCutsTheDelayShort(t *testing.T) {
	o := testOptions()
	o.ShutdownDelay = time.Hour
	lc, s := newTestServers(t, o, nil)
	lc.RequireStart()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- lc.Stop(ctx) }()
	select {
	case <-stopped:
		// Without requests in flight the servers close cleanly even with
		// the context over; either way the listeners must be gone.
	case <-time.After(10 * time.Second):
		t.Fatal("Stop ignored its context and kept waiting out the shutdown delay")
	}
	for name, addr := range map[string]string{"API": s.API.Addr().String(), "admin": s.Admin.Addr().String()} {
		if !refuses(addr) {
			t.Errorf("%s port %s still accepts connections after Stop", name, addr)
		}
	}
}

func TestNewStartBusyPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	tests := []struct {
		name      string
		api       string
		admin     string
		wantFlag  string
		wantNamed string
		// adminBinds: the admin listener binds before the failure.
		adminBinds bool
	}{
		{"API port busy", busy.Addr().String(), "127.0.0.1:0", "--http-addr", "API", true},
		{"admin port busy", "127.0.0.1:0", busy.Addr().String(), "--admin-addr", "admin", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions()
			o.HTTPAddr, o.AdminAddr = tt.api, tt.admin
			a := &announcer{}
			lc, s := newTestServers(t, o, a)

			err := lc.Start(context.Background())
			if err == nil {
				t.Fatal("Start succeeded on a busy port")
			}
			for _, want := range []string{tt.wantNamed, tt.wantFlag, "address already in use"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if !errors.Is(err, syscall.EADDRINUSE) {
				t.Errorf("error %v does not wrap EADDRINUSE", err)
			}
			if s.Health.started.Load() {
				t.Error("Health started although start-up failed")
			}
			if got := a.calls(); len(got) != 0 {
				t.Errorf("Announce called with %q although start-up failed", got)
			}
			// Nothing is left listening: the admin listener, bound first, was
			// closed again; the API one was never bound.
			switch addr := s.Admin.Addr(); {
			case tt.adminBinds && addr == nil:
				t.Error("admin listener never bound: the failure was not the API's")
			case tt.adminBinds && !refuses(addr.String()):
				t.Errorf("admin listener %s left behind after a failed start", addr)
			case !tt.adminBinds && addr != nil:
				t.Errorf("admin bound on %s although its port is busy", addr)
			}
			if addr := s.API.Addr(); addr != nil {
				t.Errorf("API bound on %s although start-up failed", addr)
			}
			if err := lc.Stop(context.Background()); err != nil {
				t.Errorf("Stop after a failed start: %v", err)
			}
		})
	}
}
