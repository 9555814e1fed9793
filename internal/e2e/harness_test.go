// Package e2e tests the built binary as a client and an operator would: it
// builds cmd/plantstore, starts it against a real redis-server and talks HTTP.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the service built once for the whole package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plantstore-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "plantstore")
	build := exec.Command("go", "build", "-o", binary, "github.com/plantstore/plantstore/cmd/plantstore")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building plantstore:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// service is a running plantstore process.
type service struct {
	t         *testing.T
	cmd       *exec.Cmd
	API       string // base URL of the API listener
	Admin     string // base URL of the admin listener
	Token     string
	TokenFile string
	logs      *logBuffer
	exited    chan error
}

// logBuffer collects the process's stderr lines and lets tests wait for one.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
	cond  *sync.Cond
}

func newLogBuffer() *logBuffer {
	b := &logBuffer{}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	b.lines = append(b.lines, line)
	b.mu.Unlock()
	b.cond.Broadcast()
}

// All returns the lines so far.
func (b *logBuffer) All() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}

func (b *logBuffer) String() string { return strings.Join(b.All(), "\n") }

type options struct {
	redisAddr string
	dev       bool
	noTokens  bool
	extra     []string
	env       []string // extra environment variables, set after cleanEnv's
}

// startService starts the binary on free loopback ports and waits until it
// answers /readyz. With opts.redisAddr empty it uses the embedded store.
func startService(t *testing.T, opts options) *service {
	t.Helper()
	s, err := launch(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.waitReady(t)
	return s
}

// launch starts the process and waits for both listeners to be bound; it
// returns an error (with the logs) when the process exits first.
func launch(t *testing.T, opts options) (*service, error) {
	t.Helper()
	s := &service{t: t, logs: newLogBuffer(), exited: make(chan error, 1)}
	args := []string{"--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--store-timeout", "500ms", "--redis-dial-timeout", "200ms", "--redis-read-timeout", "300ms",
		"--redis-write-timeout", "300ms", "--ready-timeout", "300ms", "--auth-reload-interval", "100ms",
		"--log-format", "json"}
	if !opts.noTokens && !opts.dev {
		s.Token = "e2e-token-" + strings.ReplaceAll(t.Name(), "/", "-")
		s.TokenFile = filepath.Join(t.TempDir(), "tokens")
		if err := os.WriteFile(s.TokenFile, []byte("# e2e\n"+s.Token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--auth-tokens-file", s.TokenFile)
	}
	if opts.dev {
		args = append(args, "--dev")
	}
	if opts.redisAddr != "" {
		args = append(args, "--redis-addr", opts.redisAddr)
	}
	args = append(args, opts.extra...)
	s.cmd = exec.Command(binary, args...)
	s.cmd.Env = append(cleanEnv(), opts.env...)
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
			s.logs.add(sc.Text())
		}
		s.exited <- s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.kill)

	deadline := time.Now().Add(10 * time.Second)
	for s.API == "" || s.Admin == "" || (opts.dev && s.Token == "") {
		select {
		case err := <-s.exited:
			return nil, fmt.Errorf("plantstore exited before listening (%v):\n%s", err, s.logs)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("plantstore did not listen within 10s:\n%s", s.logs)
		}
		lines := s.logs.All()
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

// cleanEnv is the test's environment without PLANTSTORE_* and OTEL_*
// variables, so that the developer's shell cannot change what is tested.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PLANTSTORE_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (s *service) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(s.Admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("plantstore not ready within 10s (last: %v):\n%s", err, s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *service) kill() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// signal sends sig and waits for the exit, returning the exit code.
func (s *service) signal(t *testing.T, sig syscall.Signal, within time.Duration) int {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("plantstore did not exit within %v of %v:\n%s", within, sig, s.logs)
		return -1
	}
}

// reply is a decoded HTTP response.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// errorBody is the contract's Error.
type errorBody struct {
	Error   *int32  `json:"error"`
	Message *string `json:"message"`
}

var client = &http.Client{Timeout: 10 * time.Second}

// do sends a request; header values of "" delete the header.
func (s *service) do(t testing.TB, method, path, body string, header map[string]string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.API+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.Token)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// post creates a plant with the service's token.
func (s *service) post(t testing.TB, body string) reply {
	t.Helper()
	return s.do(t, http.MethodPost, "/plants", body, nil)
}

// errorCode checks r is a well-formed Error body and returns its code.
func (r reply) errorCode(t testing.TB) int32 {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("status %d: Content-Type %q, want application/json; body %s", r.Status, ct, r.Body)
	}
	var e errorBody
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("status %d: body is not an Error: %v: %s", r.Status, err, r.Body)
	}
	if e.Error == nil || e.Message == nil || *e.Message == "" {
		t.Fatalf("status %d: Error body lacks error or message: %s", r.Status, r.Body)
	}
	if int(*e.Error)/100 != r.Status {
		t.Fatalf("error code %d does not match status %d", *e.Error, r.Status)
	}
	return *e.Error
}
