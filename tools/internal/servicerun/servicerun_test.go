package servicerun

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestStartRedisAnswersUntilStopped(t *testing.T) {
	r := StartRedis(t)
	if err := ping(r.Addr, ""); err != nil {
		t.Fatalf("a started server: %v", err)
	}
	r.Stop()
	r.Stop() // twice is safe
	if err := ping(r.Addr, ""); err == nil {
		t.Fatal("a stopped server still answers PING")
	}
}

func TestBuildTakesTheBinaryMadeForEveryPackage(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "plantstore")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvBinary, bin)
	if got := Build(t); got != bin {
		t.Errorf("Build() = %s, want %s", got, bin)
	}
}

func TestRepoRootHoldsTheServiceModule(t *testing.T) {
	if _, err := os.Stat(filepath.Join(RepoRoot(t), "cmd", "plantstore")); err != nil {
		t.Fatal(err)
	}
}

func TestStartRedisWithAPasswordRefusesWithoutIt(t *testing.T) {
	r := StartRedisWith(t, "pw-Zq81", "--save", "")
	if err := ping(r.Addr, "pw-Zq81"); err != nil {
		t.Fatalf("with the password: %v", err)
	}
	if err := ping(r.Addr, ""); err == nil {
		t.Fatal("PING without the password answered PONG")
	}
	if err := ping(r.Addr, "wrong"); err == nil {
		t.Fatal("AUTH with a wrong password was accepted")
	}
}

// A port taken between its choice and redis-server's bind (here by a
// listener that accepts and never answers) is told apart from other
// failures, so that StartRedisWith tries another.
func TestLaunchRedisOnATakenPort(t *testing.T) {
	bin, err := redisBinary()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := launchRedis(t, bin, l.Addr().(*net.TCPAddr).Port, "", nil)
	if !errors.Is(err, errPortInUse) {
		t.Fatalf("got %v, %v; want an error wrapping errPortInUse", r, err)
	}
}

// TestStartRedisWinsThePortRace forces the race of every start: the port
// chosen is taken just before redis-server's exec, first by a listener that
// accepts and never answers, then by another redis-server (another test's,
// which answers PING). The start still succeeds, on a third port.
func TestStartRedisWinsThePortRace(t *testing.T) {
	bin, err := redisBinary()
	if err != nil {
		t.Fatal(err)
	}
	var taken []int
	var other *Redis
	calls := 0
	beforeExec = func(port int) {
		calls++
		switch calls {
		case 1:
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				t.Errorf("taking port %d: %v", port, err)
				return
			}
			t.Cleanup(func() { l.Close() })
			taken = append(taken, port)
		case 2:
			taken = append(taken, port)
			if other, err = launchRedis(t, bin, port, "", []string{"--save", ""}); err != nil {
				t.Errorf("starting the other server on %d: %v", port, err)
			}
		}
	}
	t.Cleanup(func() { beforeExec = nil })
	r := StartRedis(t)
	if len(taken) != 2 || other == nil {
		t.Fatalf("the race was not forced: ports taken %v, other server %v", taken, other)
	}
	for _, p := range taken {
		if r.Addr == net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) {
			t.Fatalf("started on %s, a port taken", r.Addr)
		}
	}
	if calls != 4 {
		t.Errorf("%d execs, want 4 (lost to a listener, the other server's, lost to it, won)", calls)
	}
	for _, addr := range []string{r.Addr, other.Addr} {
		if err := ping(addr, ""); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

// TestListeningAddrs reads the port of a ":0" listener from /proc, as a
// test does for a child that does not report it.
func TestListeningAddrs(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		host := map[string]string{"tcp4": "127.0.0.1", "tcp6": "::1"}[network]
		l, err := net.Listen(network, net.JoinHostPort(host, "0"))
		if err != nil {
			t.Logf("%s: %v", network, err) // a machine without IPv6
			continue
		}
		addrs, err := ListeningAddrs(os.Getpid())
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, a := range addrs {
			found = found || a == l.Addr().String()
		}
		if !found {
			t.Errorf("%s listener %s not among %v", network, l.Addr(), addrs)
		}
	}
}
