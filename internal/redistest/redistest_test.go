package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestLaunchReportsPortInUse: a redis-server whose port another process
// holds is reported as ErrPortInUse, which Start answers with new ports;
// any other failure is not.
func TestLaunchReportsPortInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	s := &Server{t: t, Addr: held.Addr().String(), dir: dir, args: []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--logfile", dir + "/redis.log",
	}}
	if err := s.launch(); !errors.Is(err, ErrPortInUse) {
		t.Fatalf("launch on a held port: %v, want ErrPortInUse", err)
	}
	if s.Running() {
		t.Fatal("server reported running after it exited")
	}

	dir = t.TempDir()
	s = &Server{t: t, Addr: s.Addr, dir: dir, args: []string{"--no-such-option", "--dir", dir, "--logfile", dir + "/redis.log"}}
	if err := s.launch(); err == nil || errors.Is(err, ErrPortInUse) {
		t.Fatalf("launch with a bad option: %v, want an error other than ErrPortInUse", err)
	}
}

// TestFreePortsDistinct: ports chosen together never repeat, so a cluster
// node's bus port is never its own port.
func TestFreePortsDistinct(t *testing.T) {
	for range 50 {
		ports, err := freePorts([]string{"127.0.0.1"}, 3)
		if err != nil {
			t.Fatal(err)
		}
		if ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
			t.Fatalf("freePorts(3) = %v, not distinct", ports)
		}
	}
}

// hookBeforeExec sets beforeExec for the test and counts its calls.
func hookBeforeExec(t *testing.T, f func(call int, addr string)) *atomic.Int32 {
	t.Helper()
	var calls atomic.Int32
	beforeExec = func(addr string) { f(int(calls.Add(1)), addr) }
	t.Cleanup(func() { beforeExec = nil })
	return &calls
}

// takePort listens on addr until the test ends (a listener that accepts and
// never answers) and returns addr, "" when it could not.
func takePort(t *testing.T, addr string) string {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("taking %s: %v", addr, err)
		return ""
	}
	t.Cleanup(func() { l.Close() })
	return addr
}

// TestStartWinsThePortRace forces the race every start of a redis-server
// runs: the port chosen is taken before the child binds it (here by a
// listener that accepts and never answers, opened just before the exec).
// The start still succeeds, on another port.
func TestStartWinsThePortRace(t *testing.T) {
	var taken string
	calls := hookBeforeExec(t, func(call int, addr string) {
		if call == 1 {
			taken = takePort(t, addr)
		}
	})
	s := Start(t)
	if taken == "" || s.Addr == taken {
		t.Fatalf("started on %s; the port taken was %q", s.Addr, taken)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d execs, want 2 (the first lost the race)", n)
	}
	if err := s.Client().Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestStartWinsThePortRaceWithAnotherServer: the port is taken by another
// redis-server (another test's, chosen at the same time), which answers
// PING on it. The start tells it from its own child by its process id and
// goes on to another port.
func TestStartWinsThePortRaceWithAnotherServer(t *testing.T) {
	var other *Server
	calls := hookBeforeExec(t, func(call int, addr string) {
		if call != 1 {
			return // the other server's own exec, and the retry
		}
		host, port, _ := net.SplitHostPort(addr)
		dir := t.TempDir()
		other = &Server{t: t, Addr: addr, dir: dir, args: []string{"--port", port, "--bind", host, "--protected-mode", "no",
			"--dir", dir, "--save", "", "--logfile", filepath.Join(dir, "redis.log")}}
		if err := other.launch(); err != nil {
			t.Errorf("starting the other server on %s: %v", addr, err)
			return
		}
		t.Cleanup(other.Stop)
	})
	s := Start(t)
	if other == nil || !other.Running() || s.Addr == other.Addr {
		t.Fatalf("started on %s; the other server: %+v", s.Addr, other)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d execs, want 3 (the other server's, the one that lost, the retry)", n)
	}
	for _, srv := range []*Server{s, other} {
		if err := srv.Client().Ping(t.Context()).Err(); err != nil {
			t.Errorf("%s: %v", srv.Addr, err)
		}
	}
}

// TestRestartWaitsForItsPort: a stopped server's port is taken before it is
// restarted (by a connection or another test). Its address must not change,
// so the restart tries the same port again until it is free.
func TestRestartWaitsForItsPort(t *testing.T) {
	s := Start(t)
	addr := s.Addr
	s.Stop()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("taking the stopped server's port: %v", err)
	}
	defer l.Close()
	calls := hookBeforeExec(t, func(call int, _ string) {
		if call == 3 {
			l.Close() // free from the third try on
		}
	})
	s.Restart()
	if s.Addr != addr {
		t.Fatalf("restarted on %s, not %s", s.Addr, addr)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d execs, want 3", n)
	}
	if err := s.Client().Ping(t.Context()).Err(); err != nil {
		t.Fatalf("after Restart: %v", err)
	}
}

// TestRestartGivesUp: a port that stays taken fails the restart after its
// bound, as ErrPortInUse.
func TestRestartGivesUp(t *testing.T) {
	s := Start(t)
	s.Stop()
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := s.restart(time.Second); !errors.Is(err, ErrPortInUse) {
		t.Fatalf("restart on a port held for good: %v, want ErrPortInUse", err)
	}
	if s.Running() {
		t.Fatal("reported running")
	}
}

// TestRefusedPort: connections to it are refused while the test runs.
func TestRefusedPort(t *testing.T) {
	port := RefusedPort(t)
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err == nil {
		c.Close()
		t.Fatal("a connection to the refused port was accepted")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial: %v, want connection refused", err)
	}
	if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
		l.Close()
		t.Fatal("the refused port could be bound by another socket")
	}
}

// TestStartAndRestart: a started server answers, and answers again on the
// same address after Stop and Restart.
func TestStartAndRestart(t *testing.T) {
	s := Start(t)
	if err := s.Client().Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop()
	s.Restart()
	if err := s.Client().Ping(t.Context()).Err(); err != nil {
		t.Fatalf("after Restart: %v", err)
	}
}

// TestLaunch: a server of Launch runs in the directory it was given, emptied
// first, with its extra options winning over the defaults, and answers
// with the password it was started with.
func TestLaunch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "redis")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stale"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Launch(dir, "--appendonly", "yes", "--requirepass", "pw")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if _, err := os.Stat(filepath.Join(dir, "stale")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory was not emptied: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.Password})
	defer c.Close()
	got, err := c.ConfigGet(t.Context(), "appendonly").Result()
	if err != nil || got["appendonly"] != "yes" {
		t.Fatalf("CONFIG GET appendonly: %v, %v; want yes", got, err)
	}
	if s.Password != "pw" {
		t.Errorf("Password %q, want pw", s.Password)
	}
}

// TestServerDiesWithItsOwner: a test process killed outright (SIGKILL: no
// cleanup runs) leaves no redis-server behind. The owner is this test
// binary started again as a child, which starts a server and waits.
func TestServerDiesWithItsOwner(t *testing.T) {
	if os.Getenv("REDISTEST_OWNER") != "" {
		s, err := Launch(os.Getenv("REDISTEST_OWNER"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("pid", s.cmd.Process.Pid)
		select {}
	}
	owner := exec.Command(os.Args[0], "-test.run", "^TestServerDiesWithItsOwner$")
	owner.Env = append(os.Environ(), "REDISTEST_OWNER="+t.TempDir())
	out, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscanf(out, "pid %d\n", &pid); err != nil {
		_ = owner.Process.Kill()
		t.Fatalf("the owner did not report its server: %v", err)
	}
	_ = owner.Process.Kill()
	_ = owner.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("redis-server %d outlived its killed owner by 5s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOnFreePortsWinsThePortRace: a group of servers sharing a port on two
// addresses (pods) finds it taken before its second server binds it; the
// group is started again, the first server of the failed try stopped, on a
// new port free on both.
func TestOnFreePortsWinsThePortRace(t *testing.T) {
	hosts := []string{"127.0.0.1", "127.0.0.2"}
	var taken string
	calls := hookBeforeExec(t, func(call int, addr string) {
		if call == 2 {
			taken = takePort(t, addr)
		}
	})
	var group, stopped []*Server
	OnFreePorts(t, hosts, 1, func(ports []int) error {
		group = nil
		for _, h := range hosts {
			dir := t.TempDir()
			s, err := StartAt(t, net.JoinHostPort(h, strconv.Itoa(ports[0])), dir, serverArgs(h, func([]int) []string { return hostArgs(h) })(ports, dir)...)
			if err != nil {
				for _, g := range group {
					g.Stop()
					stopped = append(stopped, g)
				}
				return err
			}
			group = append(group, s)
		}
		return nil
	})
	if taken == "" || len(stopped) != 1 || stopped[0].Running() {
		t.Fatalf("the race was not lost once: taken %q, stopped %v", taken, stopped)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("%d execs, want 4 (one started, one lost, then the group of two)", n)
	}
	for _, s := range group {
		if s.Addr == taken {
			t.Errorf("a server runs on the port taken, %s", taken)
		}
		if err := s.Client().Ping(t.Context()).Err(); err != nil {
			t.Errorf("%s: %v", s.Addr, err)
		}
	}
}
