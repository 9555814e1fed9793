// Package servicetest runs the built plantstore binary for tests, as a client
// and an operator would: it builds cmd/plantstore once, starts it on free
// loopback ports, talks HTTP to it, reads its logs and metrics, signals it,
// and drives it with a load generator. End-to-end and chaos tests share it.
package servicetest

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/longtest"
)

// EnvBinary names a plantstore binary already built for the tests: make
// builds it once for every package that starts the service, which would
// otherwise each build it at the same time.
const EnvBinary = "PLANTSTORE_TEST_BINARY"

// Build compiles cmd/plantstore into a temporary directory, once per test
// binary (call it from TestMain), or takes the one EnvBinary names. cleanup
// removes what it made.
func Build() (binary string, cleanup func(), err error) {
	if bin := os.Getenv(EnvBinary); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", nil, fmt.Errorf("%s: %w", EnvBinary, err)
		}
		return bin, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "plantstore-servicetest")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	binary = filepath.Join(dir, "plantstore")
	build := exec.Command("go", "build", "-o", binary, "./cmd/plantstore")
	// In the main module's directory, so that a test of another module (the
	// tools') builds the service with the service's own dependency versions.
	_, self, _, _ := runtime.Caller(0)
	build.Dir = filepath.Join(filepath.Dir(self), "..", "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building plantstore: %w", err)
	}
	return binary, cleanup, nil
}

// Binary is Build for one test: the binary it built is removed when the
// test ends.
func Binary(t testing.TB) string {
	t.Helper()
	bin, cleanup, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return bin
}

// Main is the TestMain of a package of tests of the built service: it builds
// the binary into *binary once for the package, runs the tests, removes the
// binary and exits with the tests' status.
func Main(m *testing.M, binary *string) {
	bin, cleanup, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*binary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// LongMain is Main for a package of long scenarios (chaos, HA): under
// go test -short (make test-short) it builds nothing and runs nothing, and
// in CI it refuses to (see longtest).
func LongMain(m *testing.M, binary *string) {
	flag.Parse()
	longtest.Package("chaos and HA scenarios")
	Main(m, binary)
}

// Options choose how the service is started.
type Options struct {
	RedisAddr string   // empty: the embedded store
	Dev       bool     // --dev: the service prints its own token
	NoTokens  bool     // no tokens file (with Dev false the service refuses to start)
	Extra     []string // appended to the command line; a repeated flag overrides the defaults
	Env       []string // extra environment variables, set after CleanEnv's
}

// DefaultArgs are the flags every started service gets before Options.Extra:
// loopback ports chosen by the kernel and short timeouts, so that tests of
// failures do not wait for production defaults.
var DefaultArgs = []string{"--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
	"--store-timeout", "500ms", "--redis-dial-timeout", "200ms", "--redis-read-timeout", "300ms",
	"--redis-write-timeout", "300ms", "--ready-timeout", "300ms", "--auth-reload-interval", "100ms",
	"--log-format", "json"}

// Service is a running plantstore process owned by a test.
type Service struct {
	API       string // base URL of the API listener
	Admin     string // base URL of the admin listener
	Token     string // the token Do and Post send
	TokenFile string // the tokens file written for it (empty with Dev or NoTokens)
	Logs      *Logs  // its stderr, line by line

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited and been waited for
	err    error         // cmd.Wait's result, set before exited is closed
}

// Logs collects the process's stderr lines.
type Logs struct {
	mu    sync.Mutex
	lines []string
}

func (b *Logs) add(line string) {
	b.mu.Lock()
	b.lines = append(b.lines, line)
	b.mu.Unlock()
}

// All returns the lines so far.
func (b *Logs) All() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}

func (b *Logs) String() string { return strings.Join(b.All(), "\n") }

// Start starts binary on free loopback ports and waits until it answers
// /readyz. With opts.RedisAddr empty it uses the embedded store. The process
// is killed when the test ends.
func Start(t testing.TB, binary string, opts Options) *Service {
	t.Helper()
	s, err := Launch(t, binary, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.WaitReady(t)
	return s
}

// Launch starts the process and waits for both listeners to be bound; it
// returns an error (with the logs) when the process exits first.
func Launch(t testing.TB, binary string, opts Options) (*Service, error) {
	t.Helper()
	s := &Service{Logs: &Logs{}, exited: make(chan struct{})}
	args := append([]string(nil), DefaultArgs...)
	if !opts.NoTokens && !opts.Dev {
		s.Token = "test-token-" + strings.ReplaceAll(t.Name(), "/", "-")
		s.TokenFile = filepath.Join(t.TempDir(), "tokens")
		if err := os.WriteFile(s.TokenFile, []byte("# servicetest\n"+s.Token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--auth-tokens-file", s.TokenFile)
	}
	if opts.Dev {
		args = append(args, "--dev")
	}
	if opts.RedisAddr != "" {
		args = append(args, "--redis-addr", opts.RedisAddr)
	}
	args = append(args, opts.Extra...)
	s.cmd = exec.Command(binary, args...)
	s.cmd.Env = append(CleanEnv(), opts.Env...)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.Logs.add(sc.Text())
		}
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.Kill)
	// A failed test shows why the service failed requests: its own error
	// lines (not the access log's), which a CI log otherwise never carries.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, line := range s.Logs.All() {
			if strings.Contains(line, `"level":"error"`) && !strings.Contains(line, `"logger":"access"`) {
				t.Log("plantstore: " + line)
			}
		}
	})

	deadline := time.Now().Add(10 * time.Second)
	for s.API == "" || s.Admin == "" || (opts.Dev && s.Token == "") {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("plantstore exited before listening (%v):\n%s", s.err, s.Logs)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("plantstore did not listen within 10s:\n%s", s.Logs)
		}
		lines := s.Logs.All()
		for i, line := range lines {
			var entry struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil {
				switch entry.Msg {
				case "API listening":
					s.API = "http://" + entry.Addr
				case "admin listening":
					s.Admin = "http://" + entry.Addr
				}
			}
			if strings.Contains(line, "is valid until the process exits") && i+2 < len(lines) {
				s.Token = strings.TrimSpace(lines[i+2])
			}
		}
	}
	return s, nil
}

// CleanEnv is the test's environment without PLANTSTORE_* and OTEL_*
// variables, so that the developer's shell cannot change what is tested.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PLANTSTORE_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// WaitReady waits up to 10 s for /readyz to answer 200.
func (s *Service) WaitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, err := s.Ready()
		if err == nil && status == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plantstore not ready within 10s (last: %d %v):\n%s", status, err, s.Logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// PID is the process id.
func (s *Service) PID() int { return s.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (s *Service) Exited() <-chan struct{} { return s.exited }

// Kill kills the process (SIGKILL) unless it has exited, and waits for it.
func (s *Service) Kill() {
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// SendSignal sends sig without waiting.
func (s *Service) SendSignal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Wait waits for the process to exit and returns its exit code (-1 when a
// signal killed it); it fails the test when that takes longer than within.
func (s *Service) Wait(t testing.TB, within time.Duration) int {
	t.Helper()
	select {
	case <-s.exited:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("plantstore did not exit within %v:\n%s", within, s.Logs)
		return -1
	}
}

// Signal sends sig and waits for the exit, returning the exit code.
func (s *Service) Signal(t testing.TB, sig syscall.Signal, within time.Duration) int {
	t.Helper()
	s.SendSignal(t, sig)
	return s.Wait(t, within)
}

// Eventually polls cond every interval until it holds (true) or within has
// passed (false).
func Eventually(within, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}
