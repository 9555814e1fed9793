package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"github.com/prometheus/procfs"
	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/redistest"
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

// startRedis starts redis-server on a free loopback port with the chart's
// durability (AOF, fsync every second) and waits until it answers. It is
// stopped at teardown, after every process that uses it.
func (h *harness) startRedis(ctx context.Context) (string, *redis.Client, error) {
	return h.startRedisIn(ctx, "redis")
}

// startRedisIn is startRedis with its files in dir, under the work directory.
func (h *harness) startRedisIn(ctx context.Context, dir string) (string, *redis.Client, error) {
	bin, err := redistest.Binary()
	if err != nil {
		return "", nil, err
	}
	out, _ := exec.CommandContext(ctx, bin, "--version").Output()
	h.run.Machine.Redis = strings.TrimSpace(string(out))
	srv, err := redistest.Launch(filepath.Join(h.work, dir),
		"--protected-mode", "yes", "--appendonly", "yes", "--appendfsync", h.run.Appendfsync,
		"--maxmemory-policy", "noeviction",
		// No fork lands in a phase: no RDB snapshots, and no automatic AOF
		// rewrites (resetRedis rewrites between rounds). A rewrite is a fork
		// and a child writing the whole data set on the two cores, which
		// fell on whichever variant ran then (docs/performance.md).
		"--save", "", "--auto-aof-rewrite-percentage", "0")
	if err != nil {
		return "", nil, err
	}
	h.mu.Lock()
	h.redis = append(h.redis, srv)
	h.mu.Unlock()
	return srv.Addr, redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DisableIdentity: true}), nil
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

// cpuSeconds is the user and system CPU time pid has used.
func cpuSeconds(pid int) (float64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	s, err := p.Stat()
	return s.CPUTime(), err
}

// memory is what Linux says of pid's resident memory: VmRSS now, VmHWM the
// peak since exec, in bytes.
func memory(pid int) (procfs.ProcStatus, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcStatus{}, err
	}
	return p.NewStatus()
}

// cpuModel is the machine's first CPU model name, as the report records it.
func cpuModel() string {
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if cpus, err := fs.CPUInfo(); err == nil && len(cpus) > 0 {
			return cpus[0].ModelName
		}
	}
	return "unknown"
}

// loadAverage is the 1, 5 and 15 minute load averages, as /proc/loadavg
// spells them.
func loadAverage() string {
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if l, err := fs.LoadAvg(); err == nil {
			return fmt.Sprintf("%.2f %.2f %.2f", l.Load1, l.Load5, l.Load15)
		}
	}
	return "unknown"
}
