// Package redistest starts real redis-server processes for tests, on free
// loopback ports. A test that needs Redis fails when redis-server cannot be
// started: it never skips, so a green run always means Redis was exercised.
package redistest

import (
	"context"
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
	port, err := FreePort()
	if err != nil {
		t.Fatalf("finding a free port for redis-server: %v", err)
	}
	dir := t.TempDir()
	s := &Server{t: t, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	s.args = append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"),
		// A replica's first sync starts at once, not after 5 s (7.0's default).
		"--repl-diskless-sync-delay", "0",
	}, extra...)
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the server again on the same port and data directory after Stop.
func (s *Server) Restart() {
	s.t.Helper()
	bin, err := Binary()
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(bin, s.args...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	s.cmd = cmd
	client := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer client.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := client.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.Stop()
			s.t.Fatalf("redis-server on %s did not answer PING within 10s: %v\n%s", s.Addr, err, log)
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
	_ = s.cmd.Wait()
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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
