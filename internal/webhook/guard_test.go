package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/store"
)

func TestGuardCheck(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	for _, tt := range []struct {
		ip      string
		allow   []netip.Prefix
		allowed bool
	}{
		{"93.184.216.34", nil, true},
		{"2606:4700::1111", nil, true},
		{"8.8.8.8", nil, true},
		{"127.0.0.1", nil, false},
		{"127.8.9.10", nil, false},
		{"::1", nil, false},
		{"10.1.2.3", nil, false},
		{"172.16.0.1", nil, false},
		{"172.31.255.254", nil, false},
		{"192.168.1.1", nil, false},
		{"169.254.169.254", nil, false}, // cloud metadata
		{"169.254.0.1", nil, false},
		{"fe80::1", nil, false},
		{"fc00::1", nil, false},
		{"fd12:3456::1", nil, false},
		{"fd00:ec2::254", nil, false},
		{"0.0.0.0", nil, false},
		{"::", nil, false},
		{"100.64.0.1", nil, false},
		{"224.0.0.1", nil, false},
		{"ff02::1", nil, false},
		{"255.255.255.255", nil, false},
		{"::ffff:127.0.0.1", nil, false},
		{"::ffff:10.0.0.1", nil, false},
		{"::ffff:169.254.169.254", nil, false},
		{"64:ff9b::a9fe:a9fe", nil, false}, // NAT64 of 169.254.169.254
		{"2002:a00:1::1", nil, false},      // 6to4 of 10.0.0.1
		{"::127.0.0.1", nil, false},        // IPv4-compatible
		// The IPv6 forms of each IPv4 range: mapped, IPv4-compatible,
		// NAT64 (well-known and local-use) and 6to4.
		{"::ffff:127.8.9.10", nil, false},
		{"::ffff:172.16.0.1", nil, false},
		{"::ffff:192.168.1.1", nil, false},
		{"::ffff:a9fe:1", nil, false}, // 169.254.0.1 in hex
		{"::10.0.0.1", nil, false},
		{"::169.254.169.254", nil, false},
		{"64:ff9b::7f00:1", nil, false},   // NAT64 of 127.0.0.1
		{"64:ff9b::c0a8:101", nil, false}, // NAT64 of 192.168.1.1
		{"64:ff9b:1::a00:1", nil, false},  // local-use NAT64 of 10.0.0.1
		{"2002:7f00:1::1", nil, false},    // 6to4 of 127.0.0.1
		{"2002:c0a8:101::1", nil, false},  // 6to4 of 192.168.1.1
		{"2002:a9fe:a9fe::1", nil, false}, // 6to4 of 169.254.169.254
		// IPv6 link-local across fe80::/10, with a zone, and site-local.
		{"fe80::a9fe:a9fe", nil, false},
		{"febf:ffff::1", nil, false},
		{"fe80::1%eth0", nil, false},
		{"fec0::1", nil, false},
		{"fdff:ffff::1", nil, false},
		{"127.0.0.1", loopback, true},
		{"::ffff:127.0.0.1", loopback, true},
		{"::1", loopback, false},
		{"10.0.0.1", loopback, false},
	} {
		err := NewGuard(tt.allow).Check(netip.MustParseAddr(tt.ip))
		if tt.allowed != (err == nil) {
			t.Errorf("Check(%s) allow %v = %v; want allowed %v", tt.ip, tt.allow, err, tt.allowed)
		}
		if err != nil && !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("Check(%s) = %v, not ErrForbiddenAddress", tt.ip, err)
		}
	}
}

// mapResolver resolves names from a map, as a test's /etc/hosts.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestGuardDial: the guard refuses at connect time the address a name
// resolves to, and loopback until allowed; no connection reaches the
// listener when refused.
func TestGuardDial(t *testing.T) {
	var accepted atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { accepted.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	resolver := mapResolver{
		"hooks.internal.test": {netip.MustParseAddr("127.0.0.1")},
		"metadata.test":       {netip.MustParseAddr("169.254.169.254")},
		"private.test":        {netip.MustParseAddr("10.0.0.7")},
		"mapped.test":         {netip.MustParseAddr("::ffff:127.0.0.1")},
		"v6.test":             {netip.MustParseAddr("::1")},
		"link-local-v6.test":  {netip.MustParseAddr("fe80::1")},
		"ula.test":            {netip.MustParseAddr("fd00::7")},
		"nat64.test":          {netip.MustParseAddr("64:ff9b::7f00:1")},
		"private-192.test":    {netip.MustParseAddr("192.168.0.10")},
		// Every answer internal: each is refused, none dialled.
		"several.test": {netip.MustParseAddr("::1"), netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("169.254.169.254")},
		// Hosts that are not IP literals to netip but that some resolvers
		// (inet_aton) read as 127.0.0.1: refused on the address dialled.
		"2130706433": {netip.MustParseAddr("127.0.0.1")},
		"0x7f.1":     {netip.MustParseAddr("127.0.0.1")},
	}
	ctx := context.Background()
	for _, addr := range []string{"127.0.0.1:" + port, "hooks.internal.test:" + port, "metadata.test:80", "private.test:80",
		"mapped.test:" + port, "v6.test:" + port, "[::ffff:127.0.0.1]:" + port, "[::1]:" + port, "[fe80::1%lo]:" + port,
		"link-local-v6.test:80", "ula.test:80", "nat64.test:" + port, "private-192.test:80", "several.test:" + port,
		"2130706433:" + port, "0x7f.1:" + port, "169.254.169.254:80", "[fd00:ec2::254]:80"} {
		c, err := NewGuard(nil).DialContext(resolver, time.Second)(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			t.Errorf("dialled %s", addr)
		} else if !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("dial %s: %v, want ErrForbiddenAddress", addr, err)
		}
	}
	// localhost through the system's resolver (its hosts file, read only).
	if _, err := NewGuard(nil).DialContext(nil, time.Second)(ctx, "tcp", "localhost:"+port); !errors.Is(err, ErrForbiddenAddress) {
		t.Errorf("localhost: %v, want ErrForbiddenAddress", err)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("%d requests reached the listener", n)
	}
	allowed := NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}).DialContext(resolver, time.Second)
	for _, addr := range []string{"127.0.0.1:" + port, "hooks.internal.test:" + port, "mapped.test:" + port} {
		c, err := allowed(ctx, "tcp", addr)
		if err != nil {
			t.Errorf("allowed 127.0.0.0/8: dial %s: %v", addr, err)
			continue
		}
		c.Close()
	}
}

// TestSenderRefusesInternal: the sender's transport goes through the guard:
// without an allowed prefix a subscriber on loopback, by address or by name,
// is refused before any connection, and the failure is ErrForbiddenAddress.
func TestSenderRefusesInternal(t *testing.T) {
	var accepted atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { accepted.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	_, key := testSecret(t, 'r')
	s := NewSender(NewGuard(nil), nil, time.Second, 1, "plantstore/test")
	for _, raw := range []string{srv.URL + "/hook", "http://localhost:" + port + "/hook", "http://[::ffff:127.0.0.1]:" + port + "/hook"} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		status, err := s.Send(context.Background(), Subscriber{URL: u, Secrets: []Secret{key}, Name: u.Host}, testEvent(), time.Now())
		if !errors.Is(err, ErrForbiddenAddress) || status != 0 {
			t.Errorf("send to %s: %d, %v; want ErrForbiddenAddress", raw, status, err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("%d requests reached the listener", n)
	}
}

func testEvent() store.Event {
	tag := "green"
	return store.Event{ID: "msg_0123", Type: store.EventCreated, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Plant: plant.Plant{ID: -5, Name: "Fern", Tag: &tag}}
}

// TestSender: a redirect is not followed (and is a failure), an answer is
// read no further than maxResponseBytes, a slow subscriber times out, and
// errors never quote the URL.
func TestSender(t *testing.T) {
	var redirectHit atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/target", http.StatusFound) })
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { redirectHit.Add(1) })
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 1<<20)
		for range 64 { // 64 MiB offered
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, key := testSecret(t, 'k')
	s := NewSender(NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}), nil, 300*time.Millisecond, 2, "plantstore/test")
	sub := func(path string) Subscriber {
		u, _ := url.Parse(srv.URL + path + "?token=s3cret")
		return Subscriber{URL: u, Secrets: []Secret{key}, Name: u.Host}
	}
	ctx := context.Background()
	if status, err := s.Send(ctx, sub("/ok"), testEvent(), time.Now()); err != nil || status != 204 {
		t.Fatalf("ok: %d, %v", status, err)
	}
	status, err := s.Send(ctx, sub("/redirect"), testEvent(), time.Now())
	var se *StatusError
	if !errors.As(err, &se) || status != http.StatusFound || redirectHit.Load() != 0 {
		t.Fatalf("redirect: %d, %v, target hit %d times; want a 302 failure, not followed", status, err, redirectHit.Load())
	}
	if status, err := s.Send(ctx, sub("/huge"), testEvent(), time.Now()); err != nil || status != 200 {
		t.Fatalf("huge answer: %d, %v", status, err)
	}
	start := time.Now()
	_, err = s.Send(ctx, sub("/slow"), testEvent(), time.Now())
	if err == nil || time.Since(start) > 4*time.Second {
		t.Fatalf("slow subscriber: %v after %v; want a timeout", err, time.Since(start))
	}
	if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "/slow") {
		t.Fatalf("the error quotes the URL: %v", err)
	}
}

func TestBody(t *testing.T) {
	b, err := Body(testEvent())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"plant.created","timestamp":"2026-01-02T03:04:05.000000006Z","data":{"id":-5,"name":"Fern","tag":"green"}}`
	if string(b) != want {
		t.Fatalf("body = %s, want %s", b, want)
	}
	ev := testEvent()
	ev.Plant.Tag = nil
	if b, _ := Body(ev); strings.Contains(string(b), "tag") {
		t.Fatalf("a plant without tag: %s", b)
	}
}
