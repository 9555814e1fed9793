package chart

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The chart's Redis scripts are plain shell files, charts/plantstore/files/redis/*.sh, which take their
// settings from the environment; the chart writes the values in place of those references
// (plantstore.redis.script). The tests here run each file as it is, and the copy the chart renders
// into the Redis ConfigMap, side by side against a fake redis-cli (and a fake clock) on PATH: the
// branches the real-Sentinel tests (find_master_test.go, switchover_test.go) cannot reach at will,
// in milliseconds.

// redisScriptFile is the text of files/redis/<name>.
func redisScriptFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "files", "redis", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The pods' copy of each script is its file with the values of the release written in place of the
// environment's references and the ## lines (the file's documentation) left out: for any release
// name, number of servers, master name and down-after.
func TestRedisScriptsRenderedFromFiles(t *testing.T) {
	for _, tc := range []struct {
		name      string
		release   string
		sentinel  map[string]any
		master    string
		quorum    int
		downAfter int
		failover  int
	}{
		{"the ci set", releaseName, map[string]any{}, "plantstore", 2, 5000, 30000},
		{"five servers, another master name, a long release name", "checkout-platform-production-eu-west-1-blue-green-01",
			map[string]any{"replicas": 5, "quorum": 3, "masterName": "orders.v2", "downAfterMilliseconds": 7001, "failoverTimeout": 60001}, "orders.v2", 3, 7001, 60001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := renderRelease(t, tc.release, kubeVersion, []string{sentinelValues}, map[string]any{"redis": map[string]any{"sentinel": tc.sentinel}})
			if err != nil {
				t.Fatal(err)
			}
			var sts object
			for _, o := range r.find("StatefulSet") {
				if dig(o.Obj, "spec", "template", "metadata", "labels", "app.kubernetes.io/component") == "redis" {
					sts = o
				}
			}
			name := sts.Name()
			if name == "" || str(sts.Obj, "spec", "serviceName") != name {
				t.Fatalf("no Redis StatefulSet with its own name as its Service's: %v", sts)
			}
			n, _ := strconv.Atoi(fmt.Sprint(dig(sts.Obj, "spec", "replicas")))
			var hosts []string
			for i := range n {
				hosts = append(hosts, fmt.Sprintf("%s-%d.%s.%s.svc", name, i, name, namespace))
			}
			values := strings.NewReplacer(
				"$REDIS_HOSTS", strings.Join(hosts, " "), "${REDIS_HOSTS%% *}", hosts[0], "$MASTER_NAME", tc.master,
				"$((DOWN_AFTER_MS / 2))", strconv.Itoa(tc.downAfter/2), "$DOWN_AFTER_MS", strconv.Itoa(tc.downAfter),
				"$REDIS_DOMAIN", name+"."+namespace+".svc", "$QUORUM", strconv.Itoa(tc.quorum), "$FAILOVER_TIMEOUT_MS", strconv.Itoa(tc.failover))
			conf := r.get(t, "ConfigMap", name).Obj
			rendered := map[string]string{
				"find-master.sh": str(conf, "data", "find-master.sh"),
				"switchover.sh":  str(conf, "data", "switchover.sh"),
				"sentinel.sh":    sentinelCommand(t, sts),
			}
			for script, got := range rendered {
				file := redisScriptFile(t, script)
				if strings.Contains(file, "{{") {
					t.Errorf("files/redis/%s is a template, not plain shell", script)
				}
				want := values.Replace(strings.TrimSuffix(regexp.MustCompile(`(?m)^##.*\n`).ReplaceAllString(file, ""), "\n"))
				got = strings.TrimSuffix(got, "\n")
				if got != want {
					t.Errorf("%s: the ConfigMap's copy is not the file with the values written in:\n%s", script, firstDiff(got, want))
				}
				if m := regexp.MustCompile(`\$\{?\(*(REDIS_HOSTS|MASTER_NAME|DOWN_AFTER_MS|REDIS_DOMAIN|QUORUM|FAILOVER_TIMEOUT_MS)`).FindString(got); m != "" {
					t.Errorf("%s: the ConfigMap's copy still reads %s from the environment", script, m)
				}
			}
		})
	}
}

// fakeRedisCLI is a directory with a fake redis-cli, date and sleep for PATH: redis-cli answers each
// call ("HOST:PORT ARGS...") with the replies set for it, one a call and the last one again, else
// with the reply set for its host, else "Connection refused"; date +%s and sleep read and advance a
// clock of their own, so that a script's 45 seconds pass at once.
type fakeRedisCLI struct {
	t   testing.TB
	dir string
}

const fakeRedisCLIScript = `#!/bin/sh
host=127.0.0.1 port=6379
while [ $# -gt 0 ]; do
  case $1 in
    -h) host=$2; shift 2 ;;
    -p) port=$2; shift 2 ;;
    --raw) shift ;;
    *) break ;;
  esac
done
call="$host:$port $*"
printf '%s\n' "$call" >> "$FAKE/calls"
key=$(printf '%s' "$call" | tr -c 'A-Za-z0-9.:-' '_')
n=$(grep -cxF -- "$call" "$FAKE/calls")
for f in "$FAKE/replies/$key.$n" "$FAKE/replies/$key" "$FAKE/replies/$host"; do
  [ -e "$f" ] && break
done
[ -e "$f" ] || { echo "Could not connect to Redis at $host:$port: Connection refused" >&2; exit 1; }
case $(head -n 1 "$f") in
  "Could not connect"*) cat "$f" >&2; exit 1 ;;
esac
cat "$f"
`

const fakeDateScript = `#!/bin/sh
[ "$*" = +%s ] || { echo "fake date: $*" >&2; exit 2; }
awk '{ printf "%d\n", $1 }' "$FAKE/clock"
`

const fakeSleepScript = `#!/bin/sh
awk -v d="$1" '{ printf "%.3f\n", $1 + d }' "$FAKE/clock" > "$FAKE/clock.new" && mv "$FAKE/clock.new" "$FAKE/clock"
`

func newFakeRedisCLI(t testing.TB) *fakeRedisCLI {
	t.Helper()
	f := &fakeRedisCLI{t: t, dir: t.TempDir()}
	for _, d := range []string{"bin", "replies"} {
		if err := os.Mkdir(filepath.Join(f.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{"bin/redis-cli": fakeRedisCLIScript, "bin/date": fakeDateScript, "bin/sleep": fakeSleepScript, "clock": "1000000\n", "calls": ""} {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

var fakeKey = regexp.MustCompile(`[^A-Za-z0-9.:-]`)

// reply sets the replies of a call, "HOST:PORT ARGS...": the first call gets the first, and so on,
// the calls after the last get the last.
func (f *fakeRedisCLI) reply(call string, replies ...string) {
	f.t.Helper()
	key := filepath.Join(f.dir, "replies", fakeKey.ReplaceAllString(call, "_"))
	for i, r := range replies {
		if err := os.WriteFile(fmt.Sprintf("%s.%d", key, i+1), []byte(r+"\n"), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	if err := os.WriteFile(key, []byte(replies[len(replies)-1]+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// unresolved makes every call to host fail as one to a name that does not resolve (a pod not created yet).
func (f *fakeRedisCLI) unresolved(host string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "replies", host), []byte("Could not connect to Redis at "+host+": Name or service not known\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// calls are the calls redis-cli got, in order.
func (f *fakeRedisCLI) calls() []string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "calls"))
	if err != nil {
		f.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// elapsed is how far the scripts' clock went (their sleeps).
func (f *fakeRedisCLI) elapsed() time.Duration {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "clock"))
	if err != nil {
		f.t.Fatal(err)
	}
	s, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		f.t.Fatal(err)
	}
	return time.Duration((s - 1000000) * float64(time.Second))
}

// scriptRun is what a script printed and how it exited.
type scriptRun struct {
	stdout, stderr string
	code           int
}

// run runs a script's text with sh, as the pods do, with the fakes first on PATH and env added.
func (f *fakeRedisCLI) run(text string, env []string, args ...string) scriptRun {
	f.t.Helper()
	path := filepath.Join(f.t.TempDir(), "script.sh")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", append([]string{path}, args...)...)
	cmd.Env = append([]string{"PATH=" + filepath.Join(f.dir, "bin") + ":" + os.Getenv("PATH"), "FAKE=" + f.dir}, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := scriptRun{stdout: strings.TrimSpace(stdout.String()), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.code = exit.ExitCode()
	case err != nil:
		f.t.Fatal(err)
	}
	return run
}

// The three pods of the ci set, as the ConfigMap's copies name them.
var scriptHosts = []string{
	"plantstore-redis-0.plantstore-redis.plantstore.svc",
	"plantstore-redis-1.plantstore-redis.plantstore.svc",
	"plantstore-redis-2.plantstore-redis.plantstore.svc",
}

// redisScriptRunners runs a scenario twice, as a subtest each: with the file as it is, its settings
// in the environment, and with the ConfigMap's copy for the ci set, which has them written in.
func redisScriptRunners(t *testing.T, script string, scenario func(t *testing.T, f *fakeRedisCLI, run func(args ...string) scriptRun)) {
	t.Helper()
	r := mustRender(t, []string{sentinelValues}, map[string]any{"redis": map[string]any{"sentinel": map[string]any{"downAfterMilliseconds": 5000}}})
	rendered := str(r.get(t, "ConfigMap", "plantstore-redis").Obj, "data", script)
	file := redisScriptFile(t, script)
	env := []string{"REDIS_HOSTS=" + strings.Join(scriptHosts, " "), "MASTER_NAME=plantstore", "DOWN_AFTER_MS=5000"}
	for _, c := range []struct {
		name, text string
		env        []string
	}{{"file", file, env}, {"rendered", rendered, nil}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeRedisCLI(t)
			scenario(t, f, func(args ...string) scriptRun { return f.run(c.text, c.env, args...) })
		})
	}
}

// sentinelMasterReply is SENTINEL master's reply (redis-cli --raw): names and values, a line each.
func sentinelMasterReply(ip, flags string, lastOK int) string {
	return fmt.Sprintf("name\nplantstore\nip\n%s\nport\n6379\nflags\n%s\nlast-ok-ping-reply\n%d\nquorum\n2", ip, flags, lastOK)
}

func TestFindMasterScript(t *testing.T) {
	h0, h1, h2 := scriptHosts[0], scriptHosts[1], scriptHosts[2]
	addr := func(h string) string { return h + ":26379 SENTINEL get-master-addr-by-name plantstore" }
	ckquorum := func(h string) string { return h + ":26379 SENTINEL ckquorum plantstore" }
	master := func(h string) string { return h + ":26379 SENTINEL master plantstore" }
	const quorumOK = "OK 3 usable Sentinels. Quorum and failover authorization can be reached"
	want := func(t *testing.T, run scriptRun, code int, stdout string) {
		t.Helper()
		if run.code != code || run.stdout != stdout {
			t.Fatalf("find-master.sh exited %d printing %q, want %d and %q; it said: %s", run.code, run.stdout, code, stdout, run.stderr)
		}
	}

	for _, tc := range []struct {
		name     string
		scenario func(t *testing.T, f *fakeRedisCLI, run func(args ...string) scriptRun)
	}{
		{"a new set: the first pod's", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.unresolved(h1)
			f.unresolved(h2)
			want(t, run(h0), 0, h0)
			// The second pod of a new set, the first one's server up, its Sentinel not yet.
			f.reply(addr(h0), "")
			f.reply(h0+":6379 info replication", "# Replication\r\nrole:master\r\nconnected_slaves:0\r")
			want(t, run(h1), 0, h0)
		}},
		{"a Sentinel names the master", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(addr(h1), "Could not connect to Redis at "+h1+":26379: Connection refused")
			f.reply(addr(h2), h2, "6379")
			want(t, run(h0), 0, h2)
		}},
		{"named, and not missed: master again", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			for _, h := range []string{h1, h2} {
				f.reply(addr(h), h0)
				f.reply(ckquorum(h), quorumOK)
				f.reply(master(h), sentinelMasterReply(h0, "master", 2499))
			}
			want(t, run(h0), 0, h0)
			if e := f.elapsed(); e != 0 {
				t.Errorf("it waited %v", e)
			}
		}},
		{"named, but missed half the down-after: waits for the failover", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			for _, h := range []string{h1, h2} {
				f.reply(addr(h), h0, h0, h0, h1)
				f.reply(ckquorum(h), quorumOK)
				f.reply(master(h), sentinelMasterReply(h0, "master", 2500), sentinelMasterReply(h0, "master", 3500), sentinelMasterReply(h0, "s_down,master", 4500))
			}
			got := run(h0)
			want(t, got, 0, h1)
			for _, w := range []string{"no answer for 2500ms", "(s_down,master)", "waiting for the new master"} {
				if !strings.Contains(got.stderr, w) {
					t.Errorf("it said %q, want %q in it", got.stderr, w)
				}
			}
			if e := f.elapsed(); e != 3*time.Second {
				t.Errorf("it named the new master after %v, want 3s (a second a round)", e)
			}
		}},
		{"named, a failover already begun", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(addr(h1), h0, h2)
			f.reply(addr(h2), "Could not connect to Redis at "+h2+":26379: Connection refused")
			f.reply(ckquorum(h1), quorumOK)
			f.reply(master(h1), sentinelMasterReply(h0, "master,failover_in_progress", 100))
			want(t, run(h0), 0, h2)
		}},
		{"named by Sentinels without a quorum: master again", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			for _, h := range []string{h1, h2} {
				f.reply(addr(h), h0)
				f.reply(ckquorum(h), "NOQUORUM 1 usable Sentinels. Not enough available Sentinels to reach the specified quorum for this master")
				f.reply(master(h), sentinelMasterReply(h0, "o_down,master", 9000))
			}
			want(t, run(h0), 0, h0)
		}},
		{"no Sentinel yet: the standalone server that holds the plants", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(addr(h0), "Could not connect to Redis at "+h0+":26379: Connection refused")
			f.reply(addr(h2), "NOAUTH Authentication required.")
			f.reply(h2+":6379 info replication", "# Replication\r\nrole:slave\r")
			f.reply(h0+":6379 info replication", "# Replication\r\nrole:master\r\nconnected_slaves:0\r")
			want(t, run(h1), 0, h0)
		}},
		{"nothing answers for 45s: fails rather than start a second master", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(addr(h1), "ERR no such master with that name")
			got := run(h0)
			want(t, got, 1, "")
			if !strings.Contains(got.stderr, "no master named for 45s") || !strings.Contains(got.stderr, "unanswered: "+h1+" "+h2) {
				t.Errorf("it said %q", got.stderr)
			}
			if e := f.elapsed(); e < 45*time.Second || e > 47*time.Second {
				t.Errorf("it gave up after %v, want 45s", e)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			redisScriptRunners(t, "find-master.sh", tc.scenario)
		})
	}
}

func TestSwitchoverScript(t *testing.T) {
	h0, h1, h2 := scriptHosts[0], scriptHosts[1], scriptHosts[2]
	const role = "127.0.0.1:6379 info replication"
	failover := func(h string) string { return h + ":26379 SENTINEL failover plantstore" }
	master := func(h string) string { return h + ":26379 SENTINEL master plantstore" }
	const inprog = "INPROG Failover already in progress"
	for _, tc := range []struct {
		name     string
		scenario func(t *testing.T, f *fakeRedisCLI, run func(args ...string) scriptRun)
	}{
		{"a replica stops as it is", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, "# Replication\r\nrole:slave\r\nmaster_link_status:up\r")
			if got := run(h1); got.code != 0 || got.stdout != "" {
				t.Fatalf("switchover.sh on a replica exited %d printing %q: %s", got.code, got.stdout, got.stderr)
			}
			if calls := f.calls(); len(calls) != 1 {
				t.Errorf("on a replica it called %q, want only the role asked", calls)
			}
		}},
		{"the master hands over once every Sentinel names the new one", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, "# Replication\r\nrole:master\r\nconnected_slaves:2\r")
			f.reply("127.0.0.1:6379 CLIENT PAUSE 20000 WRITE", "OK")
			f.reply("127.0.0.1:6379 CLIENT KILL TYPE normal", "3")
			// Still completing an earlier failover at first.
			f.reply(failover(h1), inprog, "OK")
			f.reply(failover(h2), inprog)
			f.reply(master(h1), sentinelMasterReply(h0, "master", 1), sentinelMasterReply(h2, "master", 1))
			f.reply(master(h2), sentinelMasterReply(h0, "master", 1), sentinelMasterReply(h0, "master", 1), sentinelMasterReply(h2, "master", 1))
			got := run(h0)
			if want := "switchover: " + h0 + " hands over to " + h2 + " after 1s (failover asked of " + h1 + ")"; got.code != 0 || got.stdout != want {
				t.Fatalf("switchover.sh exited %d printing %q, want %q: %s", got.code, got.stdout, want, got.stderr)
			}
			calls := f.calls()
			if calls[1] != "127.0.0.1:6379 CLIENT PAUSE 20000 WRITE" || calls[len(calls)-1] != "127.0.0.1:6379 CLIENT KILL TYPE normal" {
				t.Errorf("calls %q: want the writes paused first and the clients closed last", calls)
			}
			for _, c := range calls {
				if strings.Contains(c, "UNPAUSE") || strings.Contains(c, "REPLICAOF") || strings.HasPrefix(c, h0+":") {
					t.Errorf("it called %q", c)
				}
			}
		}},
		{"no Sentinel fails over: writes unpaused after 20s", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, "# Replication\r\nrole:master\r\nconnected_slaves:2\r")
			f.reply(failover(h1), inprog)
			f.unresolved(h2)
			got := run(h0)
			if want := "switchover: " + h0 + " hands over to none (writes unpaused) after 20s (failover asked of no Sentinel)"; got.code != 0 || got.stdout != want {
				t.Fatalf("switchover.sh exited %d printing %q, want %q: %s", got.code, got.stdout, want, got.stderr)
			}
			if calls := f.calls(); calls[len(calls)-1] != "127.0.0.1:6379 CLIENT UNPAUSE" {
				t.Errorf("the last call %q, want the writes unpaused", calls[len(calls)-1])
			}
		}},
		{"the Sentinels never agree: writes unpaused after 20s", func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, "# Replication\r\nrole:master\r\nconnected_slaves:2\r")
			f.reply(failover(h1), "OK")
			f.reply(master(h1), sentinelMasterReply(h1, "master", 1))
			f.reply(master(h2), sentinelMasterReply(h0, "s_down,master", 1))
			got := run(h0)
			if want := "switchover: " + h0 + " hands over to none (writes unpaused) after 20s (failover asked of " + h1 + ")"; got.code != 0 || got.stdout != want {
				t.Fatalf("switchover.sh exited %d printing %q, want %q: %s", got.code, got.stdout, want, got.stderr)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			redisScriptRunners(t, "switchover.sh", tc.scenario)
		})
	}
}

// sentinelCommand is the script the Sentinel container runs (sh -c SCRIPT).
func sentinelCommand(t testing.TB, sts object) string {
	t.Helper()
	cmd := list(container(podSpec(sts), "sentinel"), "command")
	if len(cmd) != 3 || cmd[0] != "sh" || cmd[1] != "-c" {
		t.Fatalf("the Sentinel container's command is %v, want sh -c SCRIPT", cmd)
	}
	return cmd[2].(string)
}

// sentinel.sh, the Sentinel container's command, writes a configuration that watches the master
// find-master.sh names, with the password escaped, readable by its user only, and runs Sentinel on
// it; it starts none when find-master.sh fails. The file and the StatefulSet's copy, their paths
// (/etc/redis, /run/sentinel) mapped to a directory of the test's, a fake redis-server on PATH.
func TestSentinelScript(t *testing.T) {
	r := mustRender(t, []string{sentinelValues})
	copies := map[string]struct {
		text string
		env  []string
	}{
		"file":     {redisScriptFile(t, "sentinel.sh"), []string{"REDIS_DOMAIN=plantstore-redis.plantstore.svc", "MASTER_NAME=plantstore", "QUORUM=2", "DOWN_AFTER_MS=5000", "FAILOVER_TIMEOUT_MS=30000"}},
		"rendered": {sentinelCommand(t, r.get(t, "StatefulSet", "plantstore-redis")), nil},
	}
	const password = `pa"ss\word`
	for name, c := range copies {
		for _, found := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, master found %v", name, found), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				findMaster := "echo \"$1\" > " + dir + "/asked; echo " + scriptHosts[0]
				if !found {
					findMaster = "echo 'find-master: no master named for 45s' >&2; exit 1"
				}
				for path, text := range map[string]string{
					"bin/redis-server": "#!/bin/sh\necho \"redis-server $*\"\n",
					"find-master.sh":   findMaster + "\n",
				} {
					if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, path), []byte(text), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				script := strings.NewReplacer("/etc/redis/find-master.sh", dir+"/find-master.sh", "/run/sentinel", dir).Replace(c.text)
				cmd := exec.Command("sh", "-c", script)
				cmd.Env = append([]string{"PATH=" + dir + "/bin:" + os.Getenv("PATH"), "POD_NAME=plantstore-redis-1", "REDIS_PASSWORD=" + password}, c.env...)
				out, err := cmd.CombinedOutput()
				conf, readErr := os.ReadFile(filepath.Join(dir, "sentinel.conf"))
				if !found {
					if err == nil || strings.Contains(string(out), "redis-server") || readErr == nil {
						t.Fatalf("with find-master.sh failing, sentinel.sh ended with %v, wrote a configuration (%v) and said:\n%s", err, readErr == nil, out)
					}
					return
				}
				if err != nil || readErr != nil {
					t.Fatalf("sentinel.sh: %v, %v\n%s", err, readErr, out)
				}
				me := scriptHosts[1]
				if want := "sentinel: " + me + " watches " + scriptHosts[0] + "\nredis-server " + dir + "/sentinel.conf --sentinel\n"; string(out) != want {
					t.Errorf("sentinel.sh said %q, want %q", out, want)
				}
				if asked, _ := os.ReadFile(filepath.Join(dir, "asked")); string(asked) != me+"\n" {
					t.Errorf("find-master.sh was asked for %q, want %s", asked, me)
				}
				want := strings.Join([]string{"port 26379", "dir " + dir, "sentinel resolve-hostnames yes", "sentinel announce-hostnames yes",
					"sentinel announce-ip " + me, "sentinel monitor plantstore " + scriptHosts[0] + " 6379 2",
					"sentinel down-after-milliseconds plantstore 5000", "sentinel failover-timeout plantstore 30000",
					"sentinel parallel-syncs plantstore 1", `sentinel auth-pass plantstore "pa\"ss\\word"`,
					`sentinel sentinel-pass "pa\"ss\\word"`, `requirepass "pa\"ss\\word"`}, "\n") + "\n"
				if string(conf) != want {
					t.Errorf("sentinel.conf:\n%s", firstDiff(string(conf), want))
				}
				if fi, err := os.Stat(filepath.Join(dir, "sentinel.conf")); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("sentinel.conf's mode is %v (%v), want 0600: it holds the password", fi.Mode().Perm(), err)
				}
			})
		}
	}
}
