package chart

import (
	"bufio"
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
	"strings"
	"testing"
	"time"
)

// The Sentinels' down-after in these runs (the chart's default): the script
// starts a server as master again only while the Sentinels have missed it for
// less than half of it.
const findMasterDownAfter = 5 * time.Second

// TestFindMasterOnRealSentinels runs the chart's find-master.sh against real
// redis-servers and Sentinels on loopback, each "pod" on its own 127.73.N.x
// address with the chart's two ports mapped to free ones. It is the first
// pod's script as it restarts, its own Sentinel gone with it.
func TestFindMasterOnRealSentinels(t *testing.T) {
	script := renderFindMaster(t)

	// The master's pod is back before the Sentinels have missed it for half
	// their down-after: it is the master again, and starting it as one
	// brings no failover.
	t.Run("back at once", func(t *testing.T) {
		t.Parallel()
		set := startSentinelSet(t, 1)
		set.stop(t, 0)
		got, took := set.findMaster(t, script, 0)
		if got != set.ip(0) {
			t.Fatalf("find-master.sh named %q after %v, want the pod itself (%s)", got, took, set.ip(0))
		}
		set.restart(t, 0, "")
		time.Sleep(findMasterDownAfter + 2*time.Second)
		for i := 1; i < 3; i++ {
			if m := set.sentinelMaster(t, i); m != set.ip(0) {
				t.Errorf("Sentinel %d names %s after the restart, want %s: a failover began", i, m, set.ip(0))
			}
		}
	})

	// Gone long enough for the Sentinels to fail over (the move from
	// standalone, where the first pod is recreated in about five seconds):
	// the script waits for the new master instead of starting a second one
	// whose acknowledged writes the promotion drops.
	t.Run("back during the failover", func(t *testing.T) {
		t.Parallel()
		set := startSentinelSet(t, 2)
		set.stop(t, 0)
		time.Sleep(findMasterDownAfter * 6 / 10)
		got, took := set.findMaster(t, script, 0)
		if got == set.ip(0) || (got != set.ip(1) && got != set.ip(2)) {
			t.Fatalf("find-master.sh named %q after %v, want the replica the Sentinels promote (%s or %s)", got, took, set.ip(1), set.ip(2))
		}
		// The other Sentinel learns the new master from the leader's hellos.
		deadline := time.Now().Add(10 * time.Second)
		for i := 1; i < 3; i++ {
			for set.sentinelMaster(t, i) != got {
				if time.Now().After(deadline) {
					t.Fatalf("Sentinel %d names %s, not %s, 10s after the script", i, set.sentinelMaster(t, i), got)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		if role := set.role(t, got); role != "master" {
			t.Errorf("%s, named master, reports role %q", got, role)
		}
	})

	// No Sentinel answers (the first pod still runs the standalone template,
	// the others start): the server that says it is master is named.
	t.Run("standalone holds the plants", func(t *testing.T) {
		t.Parallel()
		set := onFreePorts(t, 3, func(s *sentinelSet) error { return s.start(t, 0, "") })
		got, took := set.findMaster(t, script, 1)
		if got != set.ip(0) {
			t.Fatalf("find-master.sh for the second pod named %q after %v, want the standalone server %s", got, took, set.ip(0))
		}
	})
}

// renderFindMaster renders the chart's find-master.sh for the Sentinel set.
func renderFindMaster(t *testing.T) string {
	t.Helper()
	r := mustRender(t, []string{sentinelValues}, map[string]any{"redis": map[string]any{"sentinel": map[string]any{
		"downAfterMilliseconds": findMasterDownAfter.Milliseconds(),
	}}})
	return str(r.get(t, "ConfigMap", "plantstore-redis").Obj, "data", "find-master.sh")
}

// sentinelSet is three loopback "pods", 127.73.<block>.1-3, each with a
// redis-server and a Sentinel on the same two ports.
type sentinelSet struct {
	block                   int
	redisPort, sentinelPort int
	procs                   map[string]*child
}

// child is a redis-server of the set; exited is closed once it has exited.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// kill kills the child and waits for its exit.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.exited
}

func (s *sentinelSet) ip(i int) string { return fmt.Sprintf("127.73.%d.%d", s.block, i+1) }

// A redis-server or Sentinel cannot bind port 0 and report the port it got
// (--port 0 turns TCP off), so the set's two ports are chosen, then bound by
// the children. Another process may take one in between: a start that finds
// it taken (errPortInUse) is tried again, the whole set on new ports; a
// restart, whose address must not change, on the same port once it is free.
const (
	setAttempts   = 10
	restartWithin = 30 * time.Second
)

// errPortInUse: a redis-server could not bind a port chosen as free.
var errPortInUse = errors.New("port taken before redis-server bound it")

// beforeExec, when set (by a test only), is called with the address of each
// child just before it is started: the test takes the port there to force
// the race of a chosen port taken before the child binds it.
var beforeExec func(ip string, port int)

// ports chooses two ports free on the three addresses.
func (s *sentinelSet) ports(t *testing.T) {
	t.Helper()
	s.procs = map[string]*child{}
	for range 20 {
		a, b := s.freePort(), s.freePort()
		if a != 0 && b != 0 && a != b {
			s.redisPort, s.sentinelPort = a, b
			return
		}
	}
	t.Fatal("no two ports free on the three loopback addresses")
}

// freePort returns a port free on all three addresses, 0 when the one tried
// is taken on one of them. It comes from below the kernel's ephemeral range
// (32768 on): ports of that range go to every ":0" listener and outgoing
// connection on the machine, and one chosen there is taken far more often
// before a pod's server is started, or restarted, on it.
func (s *sentinelSet) freePort() int {
	port := 10000 + rand.IntN(32768-10000)
	for i := range 3 {
		l, err := net.Listen("tcp", net.JoinHostPort(s.ip(i), strconv.Itoa(port)))
		if err != nil {
			return 0
		}
		defer l.Close()
	}
	return port
}

// onFreePorts chooses the ports of a set on block and runs start, again on
// new ports (the children of the failed try killed) while it fails with
// errPortInUse, up to setAttempts times.
func onFreePorts(t *testing.T, block int, start func(*sentinelSet) error) *sentinelSet {
	t.Helper()
	var taken []error
	for range setAttempts {
		s := &sentinelSet{block: block}
		s.ports(t)
		err := start(s)
		if err == nil {
			return s
		}
		s.killAll()
		if !errors.Is(err, errPortInUse) {
			t.Fatal(err)
		}
		taken = append(taken, err)
	}
	t.Fatalf("the set's ports were taken %d times in a row:\n%v", setAttempts, errors.Join(taken...))
	return nil
}

// killAll kills every child of the set.
func (s *sentinelSet) killAll() {
	for _, c := range s.procs {
		c.kill()
	}
	s.procs = map[string]*child{}
}

// startSentinelSet starts the first pod's server as master, the other two
// as its replicas, and the other two pods' Sentinels (the first pod's is
// restarting with it), and waits until both know both replicas and each
// other.
func startSentinelSet(t *testing.T, block int) *sentinelSet {
	t.Helper()
	s := onFreePorts(t, block, func(s *sentinelSet) error {
		for i, master := range []string{"", s.ip(0), s.ip(0)} {
			if err := s.start(t, i, master); err != nil {
				return err
			}
		}
		for i := 1; i < 3; i++ {
			if err := s.startSentinel(t, i); err != nil {
				return err
			}
		}
		return nil
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for i := 1; i < 3; i++ {
			out, _ := s.cli(s.ip(i), s.sentinelPort, "SENTINEL", "master", "plantstore")
			f := fields(out)
			ok = ok && f["num-slaves"] == "2" && f["num-other-sentinels"] == "1"
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatal("the Sentinels did not learn both replicas and each other within 20s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fields reads redis-cli --raw's lines of a flat reply as name, value pairs.
func fields(raw string) map[string]string {
	lines := strings.Split(raw, "\n")
	out := map[string]string{}
	for i := 0; i+1 < len(lines); i += 2 {
		out[lines[i]] = lines[i+1]
	}
	return out
}

// start starts pod i's redis-server, a replica of master unless it is "".
func (s *sentinelSet) start(t *testing.T, i int, master string) error {
	t.Helper()
	dir := t.TempDir()
	args := []string{"--port", strconv.Itoa(s.redisPort), "--bind", s.ip(i), "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"), "--save", "", "--appendonly", "yes",
		"--repl-diskless-sync-delay", "0", "--replica-announce-ip", s.ip(i)}
	if master != "" {
		args = append(args, "--replicaof", master, strconv.Itoa(s.redisPort))
	}
	return s.run(t, fmt.Sprintf("redis-%d", i), s.ip(i), s.redisPort, dir, args...)
}

// restart starts pod i's redis-server again after stop, on the same port:
// while the port is taken (by a connection's or another test's socket) it
// is tried again, for up to restartWithin.
func (s *sentinelSet) restart(t *testing.T, i int, master string) {
	t.Helper()
	deadline := time.Now().Add(restartWithin)
	for {
		err := s.start(t, i, master)
		if err == nil {
			return
		}
		if !errors.Is(err, errPortInUse) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startSentinel starts pod i's Sentinel watching the first pod's server.
func (s *sentinelSet) startSentinel(t *testing.T, i int) error {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf(`port %d
bind %s
dir %s
logfile %s
sentinel announce-ip %s
sentinel monitor plantstore %s %d 2
sentinel down-after-milliseconds plantstore %d
sentinel failover-timeout plantstore 30000
sentinel parallel-syncs plantstore 1
`, s.sentinelPort, s.ip(i), dir, filepath.Join(dir, "sentinel.log"), s.ip(i), s.ip(0), s.redisPort, findMasterDownAfter.Milliseconds())
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return s.run(t, fmt.Sprintf("sentinel-%d", i), s.ip(i), s.sentinelPort, dir, conf, "--sentinel")
}

// run starts redis-server with args and waits until it answers on ip:port;
// it fails the test (never skips) when redis-server is missing. It returns
// an error wrapping errPortInUse when the child exited on "Address already
// in use", or another process answered on its port. The exit is watched
// beside the pings: a port taken by a process that accepts and never
// answers would hold every PING for redis-cli's timeout.
func (s *sentinelSet) run(t *testing.T, name, ip string, port int, dir string, args ...string) error {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (make test installs it): %v", err)
	}
	if beforeExec != nil {
		beforeExec(ip, port)
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	c := &child{cmd: cmd, exited: exited}
	s.procs[name] = c
	t.Cleanup(c.kill)
	logPath := filepath.Join(dir, strings.SplitN(name, "-", 2)[0]+".log")
	answered := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() { answered <- s.pingOwn(ip, port, cmd.Process.Pid, stop) }()
	select {
	case err := <-answered:
		if err == nil {
			return nil
		}
		c.kill()
		log, _ := os.ReadFile(logPath)
		return fmt.Errorf("%s on %s:%d: %w\n%s", name, ip, port, err, log)
	case <-exited:
		log, _ := os.ReadFile(logPath)
		if bytes.Contains(log, []byte("Address already in use")) {
			return fmt.Errorf("%s on %s:%d: %w\n%s", name, ip, port, errPortInUse, log)
		}
		t.Fatalf("%s on %s:%d exited before answering PING\n%s", name, ip, port, log)
		return nil
	}
}

// pingOwn waits until ip:port answers PING, for up to 10 s, and checks that
// the answer came from pid (INFO's process_id): another test's server on the
// same address answers too, while ours fails to bind it (errPortInUse).
func (s *sentinelSet) pingOwn(ip string, port, pid int, stop <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if out, err := s.cli(ip, port, "PING"); err == nil && out == "PONG" {
			out, err := s.cli(ip, port, "INFO", "server")
			if err == nil {
				for line := range strings.SplitSeq(out, "\n") {
					if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
						if v != strconv.Itoa(pid) {
							return fmt.Errorf("%w: process %s answered, not redis-server %d", errPortInUse, v, pid)
						}
						return nil
					}
				}
			}
		}
		if time.Now().After(deadline) {
			return errors.New("no answer to PING within 10s")
		}
		select {
		case <-stop:
			return errors.New("stopped")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop kills pod i's redis-server at once, as a pod deleted without a preStop.
func (s *sentinelSet) stop(t *testing.T, i int) {
	t.Helper()
	s.procs[fmt.Sprintf("redis-%d", i)].kill()
}

// findMaster runs the script as pod i with the chart's ports mapped to the
// set's, and returns what it printed and how long it took.
func (s *sentinelSet) findMaster(t *testing.T, script string, i int) (string, time.Duration) {
	t.Helper()
	return s.runScript(t, "find-master.sh", script, i)
}

// runScript runs one of the chart's scripts as pod i, its hosts and ports
// mapped to the set's (the pod's own server, 127.0.0.1 on the default
// port, to its address), and returns what it printed and how long it took.
func (s *sentinelSet) runScript(t *testing.T, name, script string, i int) (string, time.Duration) {
	t.Helper()
	mapped := strings.NewReplacer("-p 26379", "-p "+strconv.Itoa(s.sentinelPort), "-p 6379", "-p "+strconv.Itoa(s.redisPort),
		"-h 127.0.0.1", "-h "+s.ip(i)+" -p "+strconv.Itoa(s.redisPort)).Replace(script)
	for j := range 3 {
		mapped = strings.ReplaceAll(mapped, fmt.Sprintf("plantstore-redis-%d.plantstore-redis.plantstore.svc", j), s.ip(j))
	}
	if strings.Contains(mapped, "6379 ") || strings.Contains(mapped, ".svc") {
		t.Fatalf("the script names a host or port this test does not map:\n%s", mapped)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(mapped), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, "sh", path, s.ip(i))
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s as %s: %v after %v\n%s", name, s.ip(i), err, took, stderr.String())
	}
	t.Logf("%s as %s: %q after %v; it said: %s", name, s.ip(i), strings.TrimSpace(string(out)), took.Round(time.Millisecond), stderr.String())
	return strings.TrimSpace(string(out)), took
}

// sentinelMaster is the master pod i's Sentinel names.
func (s *sentinelSet) sentinelMaster(t *testing.T, i int) string {
	t.Helper()
	out, err := s.cli(s.ip(i), s.sentinelPort, "SENTINEL", "get-master-addr-by-name", "plantstore")
	if err != nil {
		t.Fatalf("Sentinel %d: %v", i, err)
	}
	return strings.SplitN(out, "\n", 2)[0]
}

// role is the replication role the server at ip reports.
func (s *sentinelSet) role(t *testing.T, ip string) string {
	t.Helper()
	out, err := s.cli(ip, s.redisPort, "INFO", "replication")
	if err != nil {
		t.Fatalf("INFO replication on %s: %v", ip, err)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "role:"); ok {
			return v
		}
	}
	return ""
}

// cli runs redis-cli --raw against ip:port.
func (s *sentinelSet) cli(ip string, port int, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "redis-cli", append([]string{"-h", ip, "-p", strconv.Itoa(port), "--raw"}, args...)...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("%w: %s", err, exit.Stderr)
	}
	return strings.TrimSpace(string(out)), err
}

// TestSentinelSetWinsThePortRace forces the race every start of the set
// runs: a chosen port is taken before the child binds it (here the first
// replica's, by a listener opened just before its exec). The set still
// starts, on new ports. Then a stopped server's port is taken before its
// restart, which waits for the same port to be free again.
func TestSentinelSetWinsThePortRace(t *testing.T) {
	calls := 0
	var taken string
	beforeExec = func(ip string, port int) {
		calls++
		if calls != 2 {
			return
		}
		taken = net.JoinHostPort(ip, strconv.Itoa(port))
		l, err := net.Listen("tcp", taken)
		if err != nil {
			t.Errorf("taking %s: %v", taken, err)
			return
		}
		t.Cleanup(func() { l.Close() })
	}
	t.Cleanup(func() { beforeExec = nil })
	set := startSentinelSet(t, 5)
	if taken == "" || taken == net.JoinHostPort(set.ip(1), strconv.Itoa(set.redisPort)) {
		t.Fatalf("the set runs on %d; the port taken was %q", set.redisPort, taken)
	}
	if calls != 2+5 {
		t.Errorf("%d execs, want 7 (the master and the replica that lost the race, then the set of 5)", calls)
	}

	set.stop(t, 0)
	addr := net.JoinHostPort(set.ip(0), strconv.Itoa(set.redisPort))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("taking the stopped server's port: %v", err)
	}
	defer l.Close()
	calls = 0
	beforeExec = func(string, int) {
		if calls++; calls == 3 {
			l.Close() // free from the third try on
		}
	}
	set.restart(t, 0, "")
	if calls != 3 {
		t.Errorf("%d execs of the restart, want 3", calls)
	}
	if out, err := set.cli(set.ip(0), set.redisPort, "PING"); err != nil || out != "PONG" {
		t.Fatalf("after the restart: %q, %v", out, err)
	}
}
