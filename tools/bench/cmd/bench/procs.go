package main

import (
	"bufio"
	"bytes"
	"context"
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
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// proc is a child process the harness owns.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	started time.Time
	done    chan struct{}
	waitErr error
}

// spawn starts bin with stdout and stderr to logPath. The child gets a
// process group of its own (a terminal's ^C reaches only the harness, which
// stops its children in order) and is killed if the harness dies.
func (h *harness) spawn(name, bin string, args, env []string, logPath string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = procAttr()
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, and SIGKILL when the process has not exited after grace.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// logTail returns the last lines of the process's log, for error messages.
func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.Join(lines, "\n")
}

// freePort returns a loopback port free when chosen, for redis-server to
// bind (only startRedis, which retries when it is taken first, calls it).
// It comes from below the kernel's ephemeral range (32768 on): ports of that
// range go to every ":0" listener and outgoing connection on the machine,
// so one chosen there and closed is taken far more often.
func freePort() (int, error) {
	for range 1000 {
		port := 10000 + rand.IntN(32768-10000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			ln.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port below 32768 in 1000 tries")
}

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
	return "", errors.New("redis-server not found: install it (apt-get install redis-server; make test does it) or set REDIS_SERVER")
}

// redis-server cannot bind port 0 and report the port it got (--port 0
// turns TCP off), so its port is chosen first, then bound by the child.
// Another process may take it in between: a start that fails so
// (errPortInUse) is tried again on a new port, up to redisStartAttempts
// times.
const redisStartAttempts = 10

// errPortInUse: redis-server could not bind a port chosen as free.
var errPortInUse = errors.New("port taken before redis-server bound it")

// beforeRedisExec, when set (by a test only), is called with the port
// redis-server is about to be started on, just before it is: the test takes
// the port there to force the race.
var beforeRedisExec func(port int)

// startRedis starts redis-server on a free loopback port with the chart's
// durability (AOF, fsync every second) and waits until it answers.
func (h *harness) startRedis(ctx context.Context) (string, *redis.Client, error) {
	bin, err := redisBinary()
	if err != nil {
		return "", nil, err
	}
	out, _ := exec.Command(bin, "--version").Output()
	h.run.Machine.Redis = strings.TrimSpace(string(out))
	var taken []error
	for range redisStartAttempts {
		port, err := freePort()
		if err != nil {
			return "", nil, err
		}
		addr, client, err := h.launchRedis(ctx, bin, port)
		if err == nil || !errors.Is(err, errPortInUse) {
			return addr, client, err
		}
		taken = append(taken, err)
	}
	return "", nil, fmt.Errorf("redis-server found its port taken %d times in a row: %w", redisStartAttempts, errors.Join(taken...))
}

// launchRedis is one start of startRedis, on port, in an emptied data
// directory. An error wraps errPortInUse when redis-server exited on
// "Address already in use", or another process (a redis-server of someone
// else's) answered on the port.
func (h *harness) launchRedis(ctx context.Context, bin string, port int) (string, *redis.Client, error) {
	dir := filepath.Join(h.work, "redis")
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logPath := filepath.Join(dir, "redis.log")
	args := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--protected-mode", "yes", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", h.run.Appendfsync, "--maxmemory-policy", "noeviction",
		// No fork lands in a phase: no RDB snapshots, and no automatic AOF
		// rewrites (resetRedis rewrites between rounds). A rewrite is a fork
		// and a child writing the whole data set on the two cores, which
		// fell on whichever variant ran then (docs/performance.md).
		"--save", "", "--auto-aof-rewrite-percentage", "0",
		"--logfile", logPath,
	}
	if beforeRedisExec != nil {
		beforeRedisExec(port)
	}
	p, err := h.spawn("redis-server", bin, args, os.Environ(), filepath.Join(h.work, "redis.out"))
	if err != nil {
		return "", nil, err
	}
	redisLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	// The probe's short timeouts bound each try: a port taken by a process
	// that accepts and never answers would otherwise hold one for go-redis's
	// default read timeout, and the exit is checked between tries.
	probe := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	defer probe.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := probe.Info(ctx, "server").Result()
		if err == nil {
			if pid := infoField(info, "process_id"); pid != strconv.Itoa(p.pid()) {
				p.stop(time.Second)
				return "", nil, fmt.Errorf("redis-server on %s: %w: process %s answered, not redis-server %d", addr, errPortInUse, pid, p.pid())
			}
			return addr, redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true}), nil
		}
		if p.exited() {
			if log := redisLog(); strings.Contains(log, "Address already in use") {
				return "", nil, fmt.Errorf("redis-server on %s: %w:\n%s", addr, errPortInUse, lastLines([]byte(log), 8))
			}
			return "", nil, fmt.Errorf("redis-server exited at start (%v):\n%s\n%s", p.waitErr, p.logTail(), lastLines([]byte(redisLog()), 8))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", nil, fmt.Errorf("redis-server did not answer on %s: %v\n%s", addr, err, p.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// infoField is field's value in INFO's answer, "" without it.
func infoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), field+":"); ok {
			return v
		}
	}
	return ""
}

// resetRedis empties Redis and rewrites its AOF between rounds, so that
// every round starts from the same state and the AOF stays small (Redis
// runs with automatic rewrites off: see startRedis).
func resetRedis(ctx context.Context, c *redis.Client) error {
	if err := c.FlushAll(ctx).Err(); err != nil {
		return err
	}
	if err := c.BgRewriteAOF(ctx).Err(); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		info, err := c.Info(ctx, "persistence").Result()
		if err != nil {
			return err
		}
		if strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("AOF rewrite did not finish within 15s")
}

// sink is an OTLP/HTTP endpoint that reads and drops every export.
type sink struct {
	url            string
	srv            *http.Server
	exports, bytes atomic.Int64
}

func (h *harness) startSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{url: "http://" + ln.Addr().String()}
	s.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		s.exports.Add(1)
		s.bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = s.srv.Serve(ln) }()
	h.mu.Lock()
	h.sinks = append(h.sinks, s)
	h.mu.Unlock()
	return s, nil
}

// logLine is what the harness reads of a JSON log line.
type logLine struct {
	Msg  string `json:"msg"`
	Addr string `json:"addr"`
}

// listening reads the API and admin addresses from the "API listening" and
// "admin listening" lines of a JSON log.
func listening(log []byte) (api, admin string) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte("listening")) {
			continue
		}
		var l logLine
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		switch l.Msg {
		case "API listening":
			api = l.Addr
		case "admin listening":
			admin = l.Addr
		}
	}
	return api, admin
}

// awaitReady polls the process's log for its addresses, then GET /readyz on
// the admin address every 2 ms, and returns the addresses and the time from
// exec to the first 200.
func awaitReady(ctx context.Context, p *proc) (api, admin string, ready time.Duration, err error) {
	const poll = 2 * time.Millisecond
	deadline := p.started.Add(20 * time.Second)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	wait := func() error {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		if p.exited() {
			return fmt.Errorf("%s exited during start-up (%v):\n%s", p.name, p.waitErr, p.logTail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within 20s:\n%s", p.name, p.logTail())
		}
		return nil
	}
	for api == "" || admin == "" {
		b, _ := os.ReadFile(p.logPath)
		if api, admin = listening(b); api != "" && admin != "" {
			break
		}
		if err := wait(); err != nil {
			return "", "", 0, err
		}
	}
	if err := loopbackOnly(api, admin); err != nil {
		return "", "", 0, err
	}
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	for {
		resp, err := client.Get("http://" + admin + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return api, admin, time.Since(p.started), nil
			}
		}
		if err := wait(); err != nil {
			return "", "", 0, err
		}
	}
}

func loopbackOnly(addrs ...string) error {
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("server address %q is not on loopback", a)
		}
	}
	return nil
}

// countAccessLines counts the access log lines in a service log.
func countAccessLines(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var n int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"logger":"access"`)) {
			n++
		}
	}
	return n
}

// procAttr is how every child runs: in its own process group, killed if the
// harness dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// chartAppendfsync is the AOF fsync policy the chart runs its Redis with
// (redis.appendfsync in charts/plantstore/values.yaml under root), so that
// Redis is measured as it is deployed.
func chartAppendfsync(root string) (string, error) {
	path := filepath.Join(root, "charts", "plantstore", "values.yaml")
	values, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^  appendfsync: (\w+)$`).FindSubmatch(values)
	if m == nil {
		return "", fmt.Errorf("no redis.appendfsync in %s", path)
	}
	return string(m[1]), nil
}

// redisInfoInt reads one integer field of Redis's INFO section.
func redisInfoInt(ctx context.Context, c *redis.Client, section, field string) (int64, error) {
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return 0, err
	}
	return infoInt(info, field)
}

// infoInt is field's value in INFO's answer.
func infoInt(info, field string) (int64, error) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("INFO field %s: %w", field, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("INFO has no field %s", field)
}
