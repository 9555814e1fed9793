package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/plantstore/plantstore/tools/bench/internal/load"
)

// proc is a child process the harness owns.
type proc struct {
	name    string
	cmd     *exec.Cmd
	cancel  context.CancelFunc // stops it: SIGTERM, SIGKILL 5 s later
	logPath string
	started time.Time
	done    chan struct{}
	waitErr error
}

// spawn starts bin with stdout and stderr to logPath, under the work
// directory. The child gets a process group of its own (a terminal's ^C
// reaches only the harness, which stops its children in order) and is
// killed if the harness dies.
func (h *harness) spawn(name, bin string, args, env []string, logPath string) (*proc, error) {
	logPath = filepath.Join(h.work, logPath)
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = procAttr()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	p := &proc{name: name, cmd: cmd, cancel: cancel, logPath: logPath, started: time.Now(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		cancel()
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

// stop sends SIGTERM, and SIGKILL when the process has not exited 5 s
// later, and waits for it.
func (p *proc) stop() {
	p.cancel()
	<-p.done
}

// logTail returns the last lines of the process's log, for error messages.
func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	return lastLines(b, 8, "\n")
}

// lastLines is the last n lines of b, joined by sep.
func lastLines(b []byte, n int, sep string) string {
	lines := strings.Split(string(bytes.TrimSpace(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], sep)
}

// server is a server under test, started and ready: its process, API and
// admin addresses, and the API as a load target.
type server struct {
	*proc
	api, admin string
	target     *load.Target
	ready      time.Duration // from exec to the first 200 of /readyz
}

// launch spawns a server (see spawn) and waits until it is ready.
func (h *harness) launch(ctx context.Context, name, bin string, args, env []string, logPath string) (*server, error) {
	p, err := h.spawn(name, bin, args, env, logPath)
	if err != nil {
		return nil, err
	}
	s := &server{proc: p}
	if s.api, s.admin, s.ready, err = awaitReady(ctx, p); err != nil {
		return nil, err
	}
	if s.target, err = load.NewTarget(s.api, h.token, &h.ids); err != nil {
		return nil, err
	}
	return s, nil
}

// startRedis starts redis-server on a free loopback port, its files in dir
// under the work directory, with the chart's durability (AOF, fsync as the
// chart has it) and waits until it answers. It is stopped at teardown,
// after every process that uses it.
func (h *harness) startRedis(ctx context.Context, dir string) (string, *redis.Client, error) {
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

// startStore reads the chart's fsync policy, starts the Redis under test
// (h.rdb) and writes the tokens file of a new token (h.token). It returns
// Redis's address and the service's flags but its Redis address: the
// token's file, JSON logs, loopback ports the kernel picks.
func (h *harness) startStore(ctx context.Context, root string) (addr string, serviceArgs []string, err error) {
	if h.run.Appendfsync, err = chartAppendfsync(root); err != nil {
		return "", nil, err
	}
	if addr, h.rdb, err = h.startRedis(ctx, "redis"); err != nil {
		return "", nil, err
	}
	h.logf("%s on %s (AOF on, appendfsync %s)", h.run.Machine.Redis, addr, h.run.Appendfsync)
	token, line := newToken()
	h.token = token
	tokens := filepath.Join(h.work, "tokens")
	if err := os.WriteFile(tokens, []byte("# plantstore bench\n"+line), 0o600); err != nil {
		return "", nil, err
	}
	return addr, []string{"--auth-tokens-file", tokens, "--log-format", "json", "--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, nil
}

// tracedEnv starts an OTLP sink and returns the service's environment that
// exports its traces there, sampled by sampler (with arg unless "").
func (h *harness) tracedEnv(sampler, arg string) ([]string, *sink, error) {
	s := &sink{}
	srv, addr, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		s.exports.Add(1)
		s.bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	if err != nil {
		return nil, nil, err
	}
	s.srv = srv
	h.mu.Lock()
	h.sinks = append(h.sinks, s)
	h.mu.Unlock()
	env := cleanEnv("OTEL_EXPORTER_OTLP_ENDPOINT=http://"+addr, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_TRACES_SAMPLER="+sampler)
	if arg != "" {
		env = append(env, "OTEL_TRACES_SAMPLER_ARG="+arg)
	}
	return env, s, nil
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

// infoInt is field's integer value in INFO's answer (an error without it).
func infoInt(info, field string) (int64, error) {
	n, err := strconv.ParseInt(infoField(info, field), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO field %s: %w", field, err)
	}
	return n, nil
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
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := awaitChild(ctx, c, "aof_rewrite_in_progress", 20*time.Millisecond); err != nil {
		return fmt.Errorf("the AOF rewrite, given 15s: %w", err)
	}
	return nil
}

// awaitChild polls INFO persistence every poll until Redis's child
// (inProgress names it: an AOF rewrite's or a snapshot's) has ended and no
// rewrite is scheduled, and returns that INFO.
func awaitChild(ctx context.Context, c *redis.Client, inProgress string, poll time.Duration) (string, error) {
	for {
		info, err := c.Info(ctx, "persistence").Result()
		if err != nil {
			return "", err
		}
		if infoField(info, inProgress) == "0" && infoField(info, "aof_rewrite_scheduled") == "0" {
			return info, nil
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		time.Sleep(poll)
	}
}

// sink is an OTLP/HTTP endpoint that reads and drops every export.
type sink struct {
	srv            *http.Server
	exports, bytes atomic.Int64
}

// serve serves handler on a free loopback port.
func serve(handler http.Handler) (srv *http.Server, addr string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv = &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, ln.Addr().String(), nil
}

// listening reads the API and admin addresses from the "API listening" and
// "admin listening" lines of a JSON log.
func listening(log []byte) (api, admin string) {
	for line := range bytes.Lines(log) {
		var l struct{ Msg, Addr string }
		if !bytes.Contains(line, []byte("listening")) || json.Unmarshal(line, &l) != nil {
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
// the admin address, every 2 ms, and returns the addresses and the time
// from exec to the first 200.
func awaitReady(ctx context.Context, p *proc) (api, admin string, ready time.Duration, err error) {
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := p.started.Add(20 * time.Second)
	for found := false; ; {
		if !found {
			b, _ := os.ReadFile(p.logPath)
			api, admin = listening(b)
			if found = api != "" && admin != ""; found {
				if err := load.Loopback(api, admin); err != nil {
					return "", "", 0, err
				}
				continue
			}
		} else if resp, err := client.Get("http://" + admin + "/readyz"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return api, admin, time.Since(p.started), nil
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return "", "", 0, ctx.Err()
		}
		if p.exited() {
			return "", "", 0, fmt.Errorf("%s exited during start-up (%v):\n%s", p.name, p.waitErr, p.logTail())
		}
		if time.Now().After(deadline) {
			return "", "", 0, fmt.Errorf("%s not ready within 20s:\n%s", p.name, p.logTail())
		}
	}
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

// cpuSeconds is the user and system CPU time pid has used.
func cpuSeconds(pid int) (float64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	s, err := p.Stat()
	return s.CPUTime(), err
}

// memory is what Linux says of the process's resident memory, in MiB:
// VmRSS now, and VmHWM, the peak since exec.
func (p *proc) memory() (rss, peak float64, err error) {
	fp, err := procfs.NewProc(p.pid())
	if err == nil {
		var st procfs.ProcStatus
		if st, err = fp.NewStatus(); err == nil {
			return mib(st.VmRSS), mib(st.VmHWM), nil
		}
	}
	return 0, 0, fmt.Errorf("%s: %w", p.name, err)
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
