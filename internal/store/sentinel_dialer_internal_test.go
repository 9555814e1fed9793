package store

import (
	"net"
	"testing"
	"time"
)

// TestSentinelTimeout: every attempt go-redis makes at a Sentinel fits in
// the dial's deadline with one share to spare.
func TestSentinelTimeout(t *testing.T) {
	for _, tc := range []struct {
		retries int
		want    time.Duration
	}{
		{2, 250 * time.Millisecond}, // the service's default: 3 attempts
		{0, 200 * time.Millisecond}, // go-redis's default of 3 retries
		{-1, 500 * time.Millisecond},
		{5, 1000 * time.Millisecond / 7},
	} {
		if got := sentinelTimeout(RedisOptions{DialTimeout: time.Second, MaxRetries: tc.retries}); got != tc.want {
			t.Errorf("MaxRetries %d: %v, want %v", tc.retries, got, tc.want)
		}
	}
}

// TestCapDeadlines: a deadline past the limit is brought in, a nearer one
// kept, and none (zero) stays none.
func TestCapDeadlines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn := capDeadlines(raw, 100*time.Millisecond)
	defer conn.Close()
	if _, ok := conn.(*cappedTCPConn); !ok {
		t.Fatalf("a TCP connection wrapped as %T, losing SyscallConn", conn)
	}

	read := func() time.Duration {
		start := time.Now()
		_, _ = conn.Read(make([]byte, 1))
		return time.Since(start)
	}
	if err := conn.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if d := read(); d > 10*time.Second {
		t.Errorf("a read with an hour's deadline waited %v, not the limit", d)
	}
	if err := conn.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(make([]byte, 1)); !isTimeout(err) {
		t.Errorf("a read past a deadline in the past: %v, want a timeout", err)
	}
	if got := capped(time.Time{}, time.Millisecond); !got.IsZero() {
		t.Errorf("no deadline became %v", got)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
