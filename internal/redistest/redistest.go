// Package redistest starts real redis-server processes for tests, on free
// loopback ports. A test that needs Redis fails when redis-server cannot be
// started: it never skips, so a green run always means Redis was exercised.
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process owned by a test.
type Server struct {
	t    testing.TB
	Addr string
	dir  string
	args []string
	cmd  *exec.Cmd
	// exited is closed when cmd has been waited for.
	exited <-chan struct{}
}

// Binary returns the path of redis-server: $REDIS_SERVER, then PATH, then
// Debian's location.
func Binary() (string, error) {
	return find("redis-server", "REDIS_SERVER", "apt-get install redis-server, or make test does it")
}

// find returns the path of the program name: the environment variable env,
// then PATH, then Debian's /usr/bin; install says how to get it.
func find(name, env, install string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if p := "/usr/bin/" + name; fileExists(p) {
		return p, nil
	}
	return "", fmt.Errorf("%s not found: install it (%s) or set %s", name, install, env)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Start starts a redis-server on a free loopback port and stops it when the
// test ends. Extra arguments are appended to its command line.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return startOnFreePorts(t, 1, func([]int) []string { return extra })
}

// startOnFreePorts starts a redis-server on the first of n distinct free
// ports; extra builds the rest of its command line from all n. A port is
// free when chosen, not when redis-server binds it: another process may take
// it in between, so a start that fails on a port in use is tried again on
// new ones.
func startOnFreePorts(t testing.TB, n int, extra func(ports []int) []string) *Server {
	t.Helper()
	const attempts = 5
	for attempt := 1; ; attempt++ {
		ports, err := FreePorts(n)
		if err != nil {
			t.Fatalf("finding free ports for redis-server: %v", err)
		}
		dir := t.TempDir()
		s := &Server{t: t, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), dir: dir}
		s.args = append([]string{
			"--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"),
			// A replica's first sync starts at once, not after 5 s (7.0's default).
			"--repl-diskless-sync-delay", "0",
		}, extra(ports)...)
		err = s.launch()
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		if !errors.Is(err, errPortInUse) || attempt == attempts {
			t.Fatal(err)
		}
	}
}

// errPortInUse: redis-server could not bind a port chosen as free.
var errPortInUse = errors.New("port taken before redis-server bound it")

// Restart starts the server again on the same port and data directory after Stop.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.launch(); err != nil {
		s.t.Fatal(err)
	}
}

// launch starts redis-server with s.args and waits until it answers PING.
// It returns an error wrapping errPortInUse when the server exited because
// one of its ports was taken.
func (s *Server) launch() error {
	bin, err := Binary()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, s.args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	s.cmd = cmd
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.exited = exited
	// A port taken by another process may accept connections and never
	// answer: the exit is watched beside the pings, not between them.
	client := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer client.Close()
	pinged := make(chan error, 1)
	go func() { pinged <- pingUntil(client, time.Now().Add(10*time.Second)) }()
	select {
	case err := <-pinged:
		if err == nil {
			return nil
		}
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		s.Stop()
		return fmt.Errorf("redis-server on %s did not answer PING within 10s: %w\n%s", s.Addr, err, log)
	case <-exited:
		s.cmd = nil
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		if bytes.Contains(log, []byte("Address already in use")) {
			return fmt.Errorf("redis-server on %s: %w\n%s", s.Addr, errPortInUse, log)
		}
		return fmt.Errorf("redis-server on %s exited before answering PING\n%s", s.Addr, log)
	}
}

// pingUntil pings until an answer, the deadline, or the client is closed.
func pingUntil(client *redis.Client, deadline time.Time) error {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := client.Ping(ctx).Err()
		cancel()
		if err == nil || errors.Is(err, redis.ErrClosed) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server and waits for it to exit. It is safe to call twice.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// InfoInt reads an integer field of an INFO section of the server,
// failing the test without it.
func (s *Server) InfoInt(section, field string) int64 {
	s.t.Helper()
	info, err := s.Client().Info(context.Background(), section).Result()
	if err != nil {
		s.t.Fatalf("INFO %s: %v", section, err)
	}
	n, err := strconv.ParseInt(infoFields(info)[field], 10, 64)
	if err != nil {
		s.t.Fatalf("INFO %s: %s: %v", section, field, err)
	}
	return n
}

// FreePort asks the kernel for a free TCP port on loopback.
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreePorts asks the kernel for n distinct free TCP ports on loopback: each
// is held until all are chosen, since a port just released may be handed
// out again at once.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Pause stops the server process (SIGSTOP): connections stay open but
// nothing answers, the way a hung or partitioned server behaves.
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("pausing redis-server: %v", err)
	}
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatalf("resuming redis-server: %v", err)
	}
}

// addrs are the servers' addresses.
func addrs(servers []*Server) []string {
	out := make([]string, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.Addr)
	}
	return out
}
