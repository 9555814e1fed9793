// Package servicerun runs the plantstore binary and a redis-server for the
// tools module's tests (the OpenAPI and monitoring checks against a real
// service). It is the tools module's counterpart of the main module's
// internal/servicetest and internal/redistest, which it cannot import
// without requiring the main module (the service's dependency versions
// would then win over promtool's and staticcheck's).
package servicerun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvBinary names a plantstore binary make built once for every test package
// (the main module's servicetest.EnvBinary).
const EnvBinary = "PLANTSTORE_TEST_BINARY"

// Build returns the plantstore binary: EnvBinary's, else cmd/plantstore of
// this repository built into the test's temporary directory.
func Build(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(EnvBinary); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s: %v", EnvBinary, err)
		}
		return bin
	}
	root := RepoRoot(t)
	bin := filepath.Join(t.TempDir(), "plantstore")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/plantstore")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building plantstore: %v\n%s", err, out)
	}
	return bin
}

// RepoRoot is the repository's top directory, checked by its go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate servicerun's source file")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.Contains(string(gomod), "module github.com/plantstore/plantstore\n") {
		t.Fatalf("%s is not the plantstore repository (go.mod: %v)", root, err)
	}
	return root
}

// Service is a running plantstore process, stopped with SIGTERM when the
// test ends (its log printed if the test failed).
type Service struct {
	API, Admin string // base URLs
	Client     *http.Client
	exited     chan struct{}

	mu   sync.Mutex
	logs []string
}

// Log returns what the service has logged so far.
func (s *Service) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.logs, "\n")
}

// Start starts the binary with args, which must include --log-format json
// and loopback listeners, and waits for both listeners' addresses in its log
// ("API listening" and "admin listening", field addr).
func Start(t testing.TB, bin string, args ...string) *Service {
	t.Helper()
	s := &Service{Client: &http.Client{Timeout: 10 * time.Second}, exited: make(chan struct{})}
	cmd := exec.Command(bin, args...)
	// The developer's PLANTSTORE_* and OTEL_* variables must not change what
	// is tested.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLANTSTORE_") && !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting plantstore: %v", err)
	}
	addrs := make(chan [2]string, 16)
	go func() {
		defer close(s.exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logs = append(s.logs, line)
			s.mu.Unlock()
			var entry struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Addr != "" {
				select {
				case addrs <- [2]string{entry.Msg, entry.Addr}:
				default: // only the first two matter
				}
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("plantstore's log:\n%s", s.Log())
		}
	})

	timeout := time.After(15 * time.Second)
	for s.API == "" || s.Admin == "" {
		select {
		case a := <-addrs:
			switch a[0] {
			case "API listening":
				s.API = "http://" + a[1]
			case "admin listening":
				s.Admin = "http://" + a[1]
			}
		case <-s.exited:
			t.Fatalf("plantstore exited before both listeners were bound:\n%s", s.Log())
		case <-timeout:
			t.Fatalf("plantstore did not log both listeners' addresses within 15s:\n%s", s.Log())
		}
	}
	return s
}

// WaitReady waits for /readyz to answer 200, and fails the test after 15 s.
func (s *Service) WaitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := s.Client.Get(s.Admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("plantstore was not ready within 15s (last: %v):\n%s", err, s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Do sends one API request (auth is the whole Authorization value; a body
// is sent as JSON) and returns the status and the body.
func (s *Service) Do(method, path, auth, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, s.API+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp.StatusCode, got, err
}

// Redis is a redis-server process owned by the test.
type Redis struct {
	Addr     string
	Password string // requirepass; empty: none
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has exited
	once     sync.Once
}

// redisBinary is $REDIS_SERVER, else redis-server on PATH, else Debian's.
func redisBinary() (string, error) {
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", fmt.Errorf("redis-server not found: install it (apt-get install redis-server) or set REDIS_SERVER")
}

// StartRedis starts a redis-server on a free loopback port without
// persistence, and fails the test when it cannot: it never skips.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	return StartRedisWith(t, "", "--save", "", "--appendonly", "no")
}

// StartRedisWith starts a redis-server on a free loopback port, in a
// directory of its own, with password as requirepass (none when empty) and
// the further args (redis-server options, later ones winning); it fails
// the test when the server does not answer PING. redis-server cannot bind
// port 0 and report the port it got (--port 0 turns TCP off), so the port
// is chosen first; it is free when chosen, not when redis-server binds it
// (another test may take it in between): a start that fails on a port in
// use is tried again on another, up to startAttempts times.
func StartRedisWith(t testing.TB, password string, args ...string) *Redis {
	t.Helper()
	bin, err := redisBinary()
	if err != nil {
		t.Fatal(err)
	}
	var taken []error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		r, err := launchRedis(t, bin, port, password, args)
		if err == nil {
			return r
		}
		if !errors.Is(err, errPortInUse) {
			t.Fatal(err)
		}
		taken = append(taken, err)
	}
	t.Fatalf("redis-server found its port taken %d times in a row:\n%v", startAttempts, errors.Join(taken...))
	return nil
}

// startAttempts bounds the tries of a start, each on a new port.
const startAttempts = 10

// freePort returns a loopback port free when chosen, for redis-server to
// bind (only StartRedisWith, which retries when it is taken first, calls
// it). It comes from below the kernel's ephemeral range (32768 on), which it
// hands to every ":0" listener and outgoing connection on the machine.
func freePort() (int, error) {
	for range 1000 {
		port := 10000 + rand.IntN(32768-10000)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port in 10000..32767 after 1000 tries")
}

// errPortInUse: redis-server could not bind a port chosen as free.
var errPortInUse = errors.New("port taken before redis-server bound it")

// beforeExec, when set (by a test only), is called with the port a
// redis-server is about to be started on, just before it is: the test takes
// the port there to force the race of a chosen port taken before the child
// binds it.
var beforeExec func(port int)

// launchRedis starts one redis-server on port and waits until it answers
// PING; an error wraps errPortInUse when it exited because the port was
// taken, or another process (another test's redis-server) answered on it.
// The exit is watched beside the pings: a port taken by another process may
// accept connections and never answer.
func launchRedis(t testing.TB, bin string, port int, password string, args []string) (*Redis, error) {
	dir := t.TempDir()
	r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Password: password}
	all := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log")}
	if password != "" {
		all = append(all, "--requirepass", password)
	}
	if beforeExec != nil {
		beforeExec(port)
	}
	r.cmd = exec.Command(bin, append(all, args...)...)
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	r.exited = make(chan struct{})
	go func() {
		_ = r.cmd.Wait()
		close(r.exited)
	}()
	redisLog := func() []byte { b, _ := os.ReadFile(filepath.Join(dir, "redis.log")); return b }
	deadline := time.Now().Add(10 * time.Second)
	for {
		pid, err := serverPID(r.Addr, password)
		if err == nil {
			if pid != r.cmd.Process.Pid {
				r.Stop()
				return nil, fmt.Errorf("redis-server on %s: %w: process %d answered, not redis-server %d\n%s",
					r.Addr, errPortInUse, pid, r.cmd.Process.Pid, redisLog())
			}
			t.Cleanup(r.Stop)
			return r, nil
		}
		select {
		case <-r.exited:
			if log := redisLog(); bytes.Contains(log, []byte("Address already in use")) {
				return nil, fmt.Errorf("redis-server on %s: %w\n%s", r.Addr, errPortInUse, log)
			}
			return nil, fmt.Errorf("redis-server on %s exited before answering PING\n%s", r.Addr, redisLog())
		default:
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, fmt.Errorf("redis-server on %s did not answer PING within 10s: %w\n%s", r.Addr, err, redisLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverPID pings addr (after AUTH with a password) and returns the
// process_id of INFO server: which process answers on the port.
func serverPID(addr, password string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	rd := bufio.NewReader(c)
	if err := pingOn(c, rd, password); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(c, "INFO server\r\n"); err != nil {
		return 0, err
	}
	head, err := rd.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil || n < 0 {
		return 0, fmt.Errorf("INFO answered %q", head)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(rd, body); err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

// ping sends an inline PING, after AUTH with a password, and expects +PONG.
func ping(addr, password string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	return pingOn(c, bufio.NewReader(c), password)
}

// pingOn is ping on the connection c, read through rd.
func pingOn(c net.Conn, rd *bufio.Reader, password string) error {
	if password != "" {
		if _, err := io.WriteString(c, "AUTH "+password+"\r\n"); err != nil {
			return err
		}
		if line, err := rd.ReadString('\n'); err != nil || strings.TrimSpace(line) != "+OK" {
			return fmt.Errorf("AUTH answered %q: %v", line, err)
		}
	}
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return err
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// Stop kills the server and waits for it; it is safe to call twice.
func (r *Redis) Stop() {
	r.once.Do(func() {
		_ = r.cmd.Process.Kill()
		<-r.exited
	})
}
