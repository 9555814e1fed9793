// Package redistest starts real redis-server processes (servers, Sentinels,
// Cluster nodes) for tests and the benchmark, on free loopback ports: the
// one launcher of the project's Redis processes. A test that needs Redis
// fails when redis-server cannot be started: it never skips, so a green run
// always means Redis was exercised.
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// Server is a redis-server process owned by a test (Start) or a program
// (Launch).
type Server struct {
	t        testing.TB // nil for a Server of Launch
	Addr     string
	Password string // its --requirepass, "" without one
	dir      string
	args     []string
	cmd      *exec.Cmd
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

// Start starts a redis-server on a loopback address of its own (see
// ownLoopback) and a free port there, and stops it when the test ends. Extra
// arguments are appended to its command line.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return StartOn(t, ownLoopback(), extra...)
}

// ownLoopback is a random address of 127.100.0.0-127.199.255.255, the
// loopback addresses no test names. A server a test kills and restarts
// keeps its address, and while it is down its port on 127.0.0.1 could be
// given to another test's server (CI met one: the service acknowledged
// creates into the other test's Redis); on an address of its own it
// cannot.
func ownLoopback() string {
	return fmt.Sprintf("127.%d.%d.%d", 100+rand.IntN(100), rand.IntN(256), 1+rand.IntN(254))
}

// StartOn is Start on another loopback address (127.0.1.1, say: a test in
// a network namespace of its own can cut such addresses apart with iptables).
// The server also connects from it, to a master as a replica.
func StartOn(t testing.TB, host string, extra ...string) *Server {
	t.Helper()
	return startOnFreePorts(t, host, 1, func([]int) []string { return append(hostArgs(host), extra...) })
}

// hostArgs are the options of a server on another address than 127.0.0.1:
// it connects from that address too, and serves it (protected mode admits
// only 127.0.0.1 without a password).
func hostArgs(host string) []string {
	if host == "127.0.0.1" {
		return nil
	}
	return []string{"--bind-source-addr", host, "--protected-mode", "no"}
}

// startOnFreePorts starts a redis-server on host and the first of n
// distinct free ports; extra builds the rest of its command line from all n.
func startOnFreePorts(t testing.TB, host string, n int, extra func(ports []int) []string) *Server {
	t.Helper()
	return launchOnFreePorts(t, host, n, serverArgs(host, extra))
}

// serverArgs builds the command line of a server on host from its ports
// and directory: no persistence unless extra turns it on.
func serverArgs(host string, extra func(ports []int) []string) func(ports []int, dir string) []string {
	return func(ports []int, dir string) []string {
		return append([]string{
			"--port", strconv.Itoa(ports[0]), "--bind", host, "--dir", dir,
			"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"),
			// A replica's first sync starts at once, not after 5 s (7.0's default).
			"--repl-diskless-sync-delay", "0",
		}, extra(ports)...)
	}
}

// Launch is Start for a program that is not a test (the benchmark): the
// server runs in dir, which it empties, with extra appended to its command
// line (a repeated option overrides), until Stop. The methods that fail a
// test (Restart, Client, InfoInt, Pause, Resume) are for a Server of Start.
func Launch(dir string, extra ...string) (*Server, error) {
	return firstStart("127.0.0.1", 1, func() (string, error) {
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
		return dir, os.MkdirAll(dir, 0o755)
	}, serverArgs("127.0.0.1", func([]int) []string { return extra }))
}

// Every redis-server and Sentinel of the tests is started here: they
// cannot bind port 0 and report the port they got (--port 0 turns TCP off),
// so their ports are chosen first and bound by the child. Another process
// may take a chosen port in between; the launcher tells that failure apart
// (ErrPortInUse) and tries again: a first start on new ports, a restart on
// its own port (its address must not change) once it is free again.
const (
	// startAttempts bounds the tries of a first start, each on new ports.
	startAttempts = 10
	// restartWithin bounds the tries of a restart on its old port, and
	// restartPause is the wait between two of them.
	restartWithin = 30 * time.Second
	restartPause  = 100 * time.Millisecond
)

// beforeExec, when set (by a test only), is called with the address a child
// is about to be started on, just before it is: the test takes the port
// there to force the race of a chosen port taken before the child binds it.
var beforeExec func(addr string)

// launchOnFreePorts starts redis-server (a server or a Sentinel) listening
// on the first of n distinct free ports, with the command line args builds
// for them and a new data directory (whose redis.log it must log to). A port
// is free when chosen, not when redis-server binds it: another process may
// take it in between, so a start that fails on a port in use is tried again
// on new ones, up to startAttempts times.
func launchOnFreePorts(t testing.TB, host string, n int, args func(ports []int, dir string) []string) *Server {
	t.Helper()
	s, err := firstStart(host, n, func() (string, error) { return t.TempDir(), nil }, args)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(s.Stop)
	return s
}

// firstStart is launchOnFreePorts returning its error; newDir gives each
// try its own empty directory.
func firstStart(host string, n int, newDir func() (string, error), args func(ports []int, dir string) []string) (*Server, error) {
	var s *Server
	err := onFreePorts([]string{host}, n, func(ports []int) error {
		dir, err := newDir()
		if err != nil {
			return err
		}
		a := args(ports, dir)
		s = &Server{Addr: net.JoinHostPort(host, strconv.Itoa(ports[0])), Password: lastValue(a, "--requirepass"), dir: dir, args: a}
		return s.launch()
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// onFreePorts calls start with n distinct ports free on every host, again
// on new ports while it fails with ErrPortInUse, up to startAttempts times.
func onFreePorts(hosts []string, n int, start func(ports []int) error) error {
	var taken []error
	for range startAttempts {
		ports, err := freePorts(hosts, n)
		if err != nil {
			return fmt.Errorf("finding free ports for redis-server: %w", err)
		}
		err = start(ports)
		if !errors.Is(err, ErrPortInUse) {
			return err
		}
		taken = append(taken, err)
	}
	return fmt.Errorf("redis-server found its ports taken %d times in a row:\n%w", startAttempts, errors.Join(taken...))
}

// OnFreePorts starts a group of servers that share ports across hosts (a
// set of pods, each on its own address with the same ports): start gets n
// ports free on every host and starts the group with StartAt; when one of
// them finds its port taken, start stops what it started and returns that
// error (ErrPortInUse), and is called again on new ports.
func OnFreePorts(t testing.TB, hosts []string, n int, start func(ports []int) error) {
	t.Helper()
	if err := onFreePorts(hosts, n, start); err != nil {
		t.Fatal(err)
	}
}

// StartAt starts redis-server (a server or a Sentinel) with args, which
// must make it listen on addr and log to dir's redis.log, and waits until it
// answers; it is stopped when the test ends. Its error wraps ErrPortInUse
// when addr's port was taken first.
func StartAt(t testing.TB, addr, dir string, args ...string) (*Server, error) {
	t.Helper()
	s := &Server{t: t, Addr: addr, Password: lastValue(args, "--requirepass"), dir: dir, args: args}
	if err := s.launch(); err != nil {
		return nil, err
	}
	t.Cleanup(s.Stop)
	return s, nil
}

// lastValue is the value of the last option name in a command line, "" when
// it has none.
func lastValue(args []string, name string) string {
	v := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			v = args[i+1]
		}
	}
	return v
}

// ErrPortInUse: redis-server could not bind a port chosen as free.
var ErrPortInUse = errors.New("port taken before redis-server bound it")

// Restart starts the server again on the same port and data directory after
// Stop. The port may have been taken since (a connection's or another
// test's): the start is tried again on it until it is free, for up to
// restartWithin.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.restart(restartWithin); err != nil {
		s.t.Fatal(err)
	}
}

// restart is Restart returning its error, bounded by within.
func (s *Server) restart(within time.Duration) error {
	deadline := time.Now().Add(within)
	for tries := 1; ; tries++ {
		err := s.launch()
		if err == nil || !errors.Is(err, ErrPortInUse) {
			return err
		}
		if time.Now().Add(restartPause).After(deadline) {
			return fmt.Errorf("restart on %s: the port stayed taken for %v (%d tries): %w", s.Addr, within, tries, err)
		}
		time.Sleep(restartPause)
	}
}

// launch starts redis-server with s.args and waits until it answers PING.
// It returns an error wrapping ErrPortInUse when the server exited because
// one of its ports was taken, or when another process answered on its port.
func (s *Server) launch() error {
	bin, err := Binary()
	if err != nil {
		return err
	}
	if beforeExec != nil {
		beforeExec(s.Addr)
	}
	cmd := exec.Command(bin, s.args...)
	// A group of its own (a terminal's ^C reaches only its owner, which
	// stops it), and killed with its owner: no server outlives a killed
	// test or benchmark.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
	client := redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.Password, MaxRetries: -1})
	defer client.Close()
	pinged := make(chan error, 1)
	go func() { pinged <- pingOwn(client, cmd.Process.Pid, time.Now().Add(10*time.Second)) }()
	select {
	case err := <-pinged:
		if err == nil {
			return nil
		}
		s.Stop()
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		if errors.Is(err, ErrPortInUse) {
			return fmt.Errorf("redis-server on %s: %w\n%s", s.Addr, err, log)
		}
		return fmt.Errorf("redis-server on %s did not answer PING within 10s: %w\n%s", s.Addr, err, log)
	case <-exited:
		s.cmd = nil
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		if bytes.Contains(log, []byte("Address already in use")) {
			return fmt.Errorf("redis-server on %s: %w\n%s", s.Addr, ErrPortInUse, log)
		}
		return fmt.Errorf("redis-server on %s exited before answering PING\n%s", s.Addr, log)
	}
}

// pingOwn pings until an answer, the deadline, or the client is closed, and
// then checks that the answer came from the process pid: a server another
// test started on the same port answers too, while ours fails to bind it.
// That case is ErrPortInUse.
func pingOwn(client *redis.Client, pid int, deadline time.Time) error {
	for {
		if err := pingUntil(client, deadline); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := client.Info(ctx, "server").Result()
		cancel()
		if err == nil {
			got := infoFields(info)["process_id"]
			if got == strconv.Itoa(pid) {
				return nil
			}
			return fmt.Errorf("%w: process %s answered, not redis-server %d", ErrPortInUse, got, pid)
		}
		if errors.Is(err, redis.ErrClosed) || time.Now().After(deadline) {
			return err
		}
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
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.Password})
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

// freePorts returns n distinct TCP ports free on every host when chosen,
// each held until all are, for a redis-server or Sentinel to bind: only the
// launcher (onFreePorts) calls it, and it retries when one is taken
// before the child binds it. They come from below the kernel's ephemeral
// range: the kernel hands out ports of that range to every ":0" listener
// and outgoing connection on the machine, so one chosen there would be taken
// far more often. Below the range only another choice like this one takes it.
func freePorts(hosts []string, n int) ([]int, error) {
	const lowest = 10000
	top := ephemeralLow()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("no %d free ports of %v in %d..%d after %d tries", n, hosts, lowest, top-1, tries)
		}
		port := lowest + rand.IntN(top-lowest)
		held, ok := holdOnAll(hosts, port)
		defer func() {
			for _, l := range held {
				l.Close()
			}
		}()
		if ok { // else taken on one host, or chosen already and held
			ports = append(ports, port)
		}
	}
	return ports, nil
}

// holdOnAll listens on port of every host; ok when it could on all of them.
func holdOnAll(hosts []string, port int) (held []net.Listener, ok bool) {
	for _, h := range hosts {
		l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
		if err != nil {
			return held, false
		}
		held = append(held, l)
	}
	return held, true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// net.ipv4.ip_local_port_range; 32768, its default, where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo <= 12000 {
		return 32768
	}
	return lo
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

// RefusedPort returns a port of 127.0.0.1 that refuses connections for the
// rest of the test: a socket bound to a port the kernel chose (port 0) and
// not listening. Nothing else can bind the port while the socket holds it,
// unlike a port chosen as free and closed. (A REPLICAOF to a master that is
// not there, say.)
func RefusedPort(t testing.TB) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("binding 127.0.0.1:0: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("getsockname: %v", err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}
