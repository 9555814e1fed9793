package redisscripts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
)

// The Sentinels' down-after in these runs (the chart's default): the script
// starts a server as master again only while the Sentinels have missed it
// for less than half of it.
const downAfter = 5 * time.Second

// sentinelSet is three loopback "pods", 127.73.<block>.1-3, each with a
// redis-server and a Sentinel on the same two ports, as the chart's pods
// have (their names are the addresses here).
type sentinelSet struct {
	block                   int
	redisPort, sentinelPort int
	procs                   map[string]*redistest.Server
}

func (s *sentinelSet) ip(i int) string { return fmt.Sprintf("127.73.%d.%d", s.block, i+1) }

func (s *sentinelSet) ips() []string { return []string{s.ip(0), s.ip(1), s.ip(2)} }

// onFreePorts starts a set on block with start, on two ports free on all
// three addresses (redistest's launcher: again on new ports, the servers
// of the failed try stopped, when a port was taken before it was bound).
func onFreePorts(t *testing.T, block int, start func(*sentinelSet) error) *sentinelSet {
	t.Helper()
	s := &sentinelSet{block: block}
	redistest.OnFreePorts(t, s.ips(), 2, func(ports []int) error {
		s.redisPort, s.sentinelPort, s.procs = ports[0], ports[1], map[string]*redistest.Server{}
		err := start(s)
		if err != nil {
			for _, p := range s.procs {
				p.Stop()
			}
		}
		return err
	})
	return s
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
`, s.sentinelPort, s.ip(i), dir, filepath.Join(dir, "redis.log"), s.ip(i), s.ip(0), s.redisPort, downAfter.Milliseconds())
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return s.run(t, fmt.Sprintf("sentinel-%d", i), s.ip(i), s.sentinelPort, dir, conf, "--sentinel")
}

// run starts one process of the set through redistest's launcher.
func (s *sentinelSet) run(t *testing.T, name, ip string, port int, dir string, args ...string) error {
	t.Helper()
	srv, err := redistest.StartAt(t, ip+":"+strconv.Itoa(port), dir, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	s.procs[name] = srv
	return nil
}

// stop kills pod i's redis-server at once, as a pod deleted without a preStop.
func (s *sentinelSet) stop(i int) { s.procs[fmt.Sprintf("redis-%d", i)].Stop() }

// restart starts pod i's redis-server again on its port and data, waiting
// for the port while another socket holds it.
func (s *sentinelSet) restart(i int) { s.procs[fmt.Sprintf("redis-%d", i)].Restart() }

// runScript runs the chart's files/redis/NAME as pod i, with the values
// the chart writes in from the environment and the chart's ports mapped to
// the set's, and returns what it printed and how long it took.
func (s *sentinelSet) runScript(t *testing.T, name string, i int) (string, time.Duration) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "charts", "plantstore", "files", "redis", name))
	if err != nil {
		t.Fatal(err)
	}
	mapped := strings.NewReplacer("-p 26379", "-p "+strconv.Itoa(s.sentinelPort), "-p 6379", "-p "+strconv.Itoa(s.redisPort),
		"-h 127.0.0.1", "-h "+s.ip(i)+" -p "+strconv.Itoa(s.redisPort)).Replace(string(text))
	if strings.Contains(mapped, "6379 ") {
		t.Fatalf("%s names a port this test does not map:\n%s", name, mapped)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(mapped), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, "sh", path, s.ip(i))
	cmd.Env = append(os.Environ(), "REDIS_HOSTS="+strings.Join(s.ips(), " "), "MASTER_NAME=plantstore",
		"DOWN_AFTER_MS="+strconv.FormatInt(downAfter.Milliseconds(), 10))
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
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "role:"); ok {
			return v
		}
	}
	return ""
}

// cli runs redis-cli --raw against ip:port, as the scripts do.
func (s *sentinelSet) cli(ip string, port int, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cli, err := redistest.CLI()
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, cli, append([]string{"-h", ip, "-p", strconv.Itoa(port), "--raw"}, args...)...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("%w: %s", err, exit.Stderr)
	}
	return strings.TrimSpace(string(out)), err
}
