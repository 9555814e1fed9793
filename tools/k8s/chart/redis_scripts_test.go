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
// (the ConfigMap's find-master.sh and switchover.sh, the containers' commands redis.sh and
// sentinel.sh), side by side against fakes on PATH (redis-cli, redis-server, a clock): the branches
// the real-Sentinel tests (tools/redisscripts) cannot reach at will, in
// milliseconds.

// redisScriptFile is the text of files/redis/<name>.
func redisScriptFile(t testing.TB, name string) string {
	t.Helper()
	return readFile(t, chartDir, "files", "redis", name)
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
				"sentinel.sh":    containerCommand(t, sts, "sentinel"),
				"redis.sh":       containerCommand(t, sts, "redis"),
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

// fakeDateScript reads the fake clock: +%s for the scripts' arithmetic, the
// time of day to the millisecond (switchover.sh's log) as its seconds.
const fakeDateScript = `#!/bin/sh
case "$*" in
  +%s) awk '{ printf "%d\n", $1 }' "$FAKE/clock" ;;
  "-u +%H:%M:%S.%3N")
    # busybox's date (FAKE/date-without-ns) prints %N as it is
    if [ -e "$FAKE/date-without-ns" ]; then awk '{ printf "%d.%%3N\n", $1 }' "$FAKE/clock"; else awk '{ printf "%.3f\n", $1 }' "$FAKE/clock"; fi ;;
  *) echo "fake date: $*" >&2; exit 2 ;;
esac
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
		writeFile(t, filepath.Join(f.dir, name), text, 0o755)
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
		writeFile(f.t, fmt.Sprintf("%s.%d", key, i+1), r+"\n", 0o644)
	}
	writeFile(f.t, key, replies[len(replies)-1]+"\n", 0o644)
}

// unresolved makes every call to host fail as one to a name that does not resolve (a pod not created yet).
func (f *fakeRedisCLI) unresolved(host string) {
	f.t.Helper()
	writeFile(f.t, filepath.Join(f.dir, "replies", host), "Could not connect to Redis at "+host+": Name or service not known\n", 0o644)
}

// calls are the calls redis-cli got, in order.
func (f *fakeRedisCLI) calls() []string {
	f.t.Helper()
	return strings.Split(strings.TrimSuffix(readFile(f.t, f.dir, "calls"), "\n"), "\n")
}

// elapsed is how far the scripts' clock went (their sleeps).
func (f *fakeRedisCLI) elapsed() time.Duration {
	f.t.Helper()
	s, err := strconv.ParseFloat(strings.TrimSpace(readFile(f.t, f.dir, "clock")), 64)
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
	writeFile(f.t, path, text, 0o600)
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

// scenario is a run of a script against the fakes: run runs it with args.
type scenario = func(t *testing.T, f *fakeRedisCLI, run func(args ...string) scriptRun)

// runScenarios runs each scenario of a script, in parallel, as a subtest, and in it with each copy
// of the script, as a subtest each.
func runScenarios(t *testing.T, script string, scenarios map[string]scenario) {
	for name, s := range scenarios {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, c := range scriptCopies(t, script) {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					f := newFakeRedisCLI(t)
					s(t, f, func(args ...string) scriptRun { return f.run(c.text, c.env, args...) })
				})
			}
		})
	}
}

// startScripts are the containers whose command is a script of files/redis; the other scripts are
// the ConfigMap's.
var startScripts = map[string]string{"sentinel.sh": "sentinel", "redis.sh": "redis"}

// scriptCopy is a copy of a script of files/redis, and the environment it runs with.
type scriptCopy struct {
	name, text string
	env        []string
}

// scriptCopies are a script's two copies: the file as it is, its settings in the environment, and
// the chart's for the ci set, which has them written in.
func scriptCopies(t *testing.T, script string) []scriptCopy {
	t.Helper()
	r := mustRender(t, []string{sentinelValues}, valueAt("redis.sentinel.downAfterMilliseconds", 5000))
	rendered := str(r.get(t, "ConfigMap", "plantstore-redis").Obj, "data", script)
	if c, ok := startScripts[script]; ok {
		rendered = containerCommand(t, r.get(t, "StatefulSet", "plantstore-redis"), c)
	}
	env := []string{"REDIS_HOSTS=" + strings.Join(scriptHosts, " "), "REDIS_DOMAIN=plantstore-redis.plantstore.svc",
		"MASTER_NAME=plantstore", "QUORUM=2", "DOWN_AFTER_MS=5000", "FAILOVER_TIMEOUT_MS=30000"}
	return []scriptCopy{{"file", redisScriptFile(t, script), env}, {"rendered", rendered, nil}}
}

// sentinelMasterReply is SENTINEL master's reply (redis-cli --raw): names and values, a line each.
func sentinelMasterReply(ip, flags string, lastOK int) string {
	return fmt.Sprintf("name\nplantstore\nip\n%s\nport\n6379\nflags\n%s\nlast-ok-ping-reply\n%d\nquorum\n2", ip, flags, lastOK)
}

// masterInfo is a master's INFO replication (redis-cli --raw): its offset and a line for each
// replica, "STATE:ACKED" (its state and the offset it acknowledged).
func masterInfo(offset int, replicas ...string) string {
	lines := []string{"# Replication", "role:master", fmt.Sprintf("connected_slaves:%d", len(replicas))}
	for i, r := range replicas {
		state, acked, _ := strings.Cut(r, ":")
		lines = append(lines, fmt.Sprintf("slave%d:ip=%s,port=6379,state=%s,offset=%s,lag=0", i, scriptHosts[i+1], state, acked))
	}
	lines = append(lines, fmt.Sprintf("master_repl_offset:%d", offset))
	return strings.Join(lines, "\r\n") + "\r"
}

func TestFindMasterScript(t *testing.T) {
	h0, h1, h2 := scriptHosts[0], scriptHosts[1], scriptHosts[2]
	addr := func(h string) string { return h + ":26379 SENTINEL get-master-addr-by-name plantstore" }
	ckquorum := func(h string) string { return h + ":26379 SENTINEL ckquorum plantstore" }
	master := func(h string) string { return h + ":26379 SENTINEL master plantstore" }
	const quorumOK = "OK 3 usable Sentinels. Quorum and failover authorization can be reached"
	runScenarios(t, "find-master.sh", map[string]scenario{
		"a new set: the first pod's": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.unresolved(h1)
			f.unresolved(h2)
			wantRun(t, run(h0), 0, h0)
			// The second pod of a new set, the first one's server up, its Sentinel not yet.
			f.reply(addr(h0), "")
			f.reply(h0+":6379 info replication", "# Replication\r\nrole:master\r\nconnected_slaves:0\r")
			wantRun(t, run(h1), 0, h0)
		},
		"a Sentinel names the master": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(addr(h1), "Could not connect to Redis at "+h1+":26379: Connection refused")
			f.reply(addr(h2), h2, "6379")
			wantRun(t, run(h0), 0, h2)
		},
		"named, and not missed: master again": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			for _, h := range []string{h1, h2} {
				f.reply(addr(h), h0)
				f.reply(ckquorum(h), quorumOK)
				f.reply(master(h), sentinelMasterReply(h0, "master", 2499))
			}
			wantRun(t, run(h0), 0, h0)
			if e := f.elapsed(); e != 0 {
				t.Errorf("it waited %v", e)
			}
		},
		"named, but missed half the down-after: waits for the failover": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			for _, h := range []string{h1, h2} {
				f.reply(addr(h), h0, h0, h0, h1)
				f.reply(ckquorum(h), quorumOK)
				f.reply(master(h), sentinelMasterReply(h0, "master", 2500), sentinelMasterReply(h0, "master", 3500), sentinelMasterReply(h0, "s_down,master", 4500))
			}
			got := run(h0)
			wantRun(t, got, 0, h1)
			wantContains(t, "what it said", got.stderr, "no answer for 2500ms", "(s_down,master)", "waiting for the new master")
			if e := f.elapsed(); e != 3*time.Second {
				t.Errorf("it named the new master after %v, want 3s (a second a round)", e)
			}
		},
		"named, a failover already begun": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(addr(h1), h0, h2)
			f.reply(addr(h2), "Could not connect to Redis at "+h2+":26379: Connection refused")
			f.reply(ckquorum(h1), quorumOK)
			f.reply(master(h1), sentinelMasterReply(h0, "master,failover_in_progress", 100))
			wantRun(t, run(h0), 0, h2)
		},
		"named by Sentinels without a quorum: master again": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			for _, h := range []string{h1, h2} {
				f.reply(addr(h), h0)
				f.reply(ckquorum(h), "NOQUORUM 1 usable Sentinels. Not enough available Sentinels to reach the specified quorum for this master")
				f.reply(master(h), sentinelMasterReply(h0, "o_down,master", 9000))
			}
			wantRun(t, run(h0), 0, h0)
		},
		"no Sentinel yet: the standalone server that holds the plants": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(addr(h0), "Could not connect to Redis at "+h0+":26379: Connection refused")
			f.reply(addr(h2), "NOAUTH Authentication required.")
			f.reply(h2+":6379 info replication", "# Replication\r\nrole:slave\r")
			f.reply(h0+":6379 info replication", "# Replication\r\nrole:master\r\nconnected_slaves:0\r")
			wantRun(t, run(h1), 0, h0)
		},
		"nothing answers for 45s: fails rather than start a second master": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(addr(h1), "ERR no such master with that name")
			got := run(h0)
			wantRun(t, got, 1, "")
			wantContains(t, "what it said", got.stderr, "no master named for 45s", "unanswered: "+h1+" "+h2)
			if e := f.elapsed(); e < 45*time.Second || e > 47*time.Second {
				t.Errorf("it gave up after %v, want 45s", e)
			}
		},
	})
}

func TestSwitchoverScript(t *testing.T) {
	h0, h1, h2 := scriptHosts[0], scriptHosts[1], scriptHosts[2]
	const role = "127.0.0.1:6379 info replication"
	failover := func(h string) string { return h + ":26379 SENTINEL failover plantstore" }
	master := func(h string) string { return h + ":26379 SENTINEL master plantstore" }
	info := func(h string) string { return h + ":26379 INFO sentinel" }
	const inprog = "INPROG Failover already in progress"
	runScenarios(t, "switchover.sh", map[string]scenario{
		"a replica stops as it is": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, "# Replication\r\nrole:slave\r\nmaster_link_status:up\r")
			wantRun(t, run(h1), 0, "")
			if calls := f.calls(); len(calls) != 1 {
				t.Errorf("on a replica it called %q, want only the role asked", calls)
			}
		},
		"the master hands over once every Sentinel names the new one": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, masterInfo(100, "online:100", "online:100"))
			f.reply("127.0.0.1:6379 CLIENT PAUSE 20000 WRITE", "OK")
			f.reply("127.0.0.1:6379 CLIENT KILL TYPE normal", "3")
			// Still completing an earlier failover at first.
			f.reply(failover(h1), inprog, "OK")
			f.reply(failover(h2), inprog)
			f.reply(master(h1), sentinelMasterReply(h0, "master", 1), sentinelMasterReply(h2, "master", 1))
			f.reply(master(h2), sentinelMasterReply(h0, "master", 1), sentinelMasterReply(h0, "master", 1), sentinelMasterReply(h2, "master", 1))
			got := run(h0)
			// Each step logged at its time on the fake clock (from 1000000 s): the retry after
			// a second, the first Sentinel with the new master on record, the
			// second 0.2 s later.
			want := strings.Join([]string{
				"switchover: 1000000.000 " + h0 + ": writes paused",
				"switchover: 1000000.000 every replica holds all " + h0 + " has",
				"switchover: 1000000.000 the Sentinel of " + h1 + " answered 'INPROG Failover already in progress'",
				"switchover: 1000000.000 the Sentinel of " + h2 + " answered 'INPROG Failover already in progress'",
				"switchover: 1000001.000 failover asked of the Sentinel of " + h1,
				"switchover: 1000001.200 " + h2 + " on record as the master (Sentinels still naming " + h0 + ": " + h2 + ")",
				"switchover: 1000001.400 " + h0 + " hands over to " + h2 + " after 1s (failover asked of " + h1 + ")",
			}, "\n")
			wantRun(t, got, 0, want)
			calls := f.calls()
			if calls[1] != "127.0.0.1:6379 CLIENT PAUSE 20000 WRITE" || calls[len(calls)-1] != "127.0.0.1:6379 CLIENT KILL TYPE normal" {
				t.Errorf("calls %q: want the writes paused first and the clients closed last", calls)
			}
			for _, c := range calls {
				if strings.Contains(c, "UNPAUSE") || strings.Contains(c, "REPLICAOF") || strings.HasPrefix(c, h0+":") {
					t.Errorf("it called %q", c)
				}
			}
		},
		"a date without %N: the steps' times in whole seconds": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			writeFile(t, filepath.Join(f.dir, "date-without-ns"), "", 0o644)
			f.reply(role, masterInfo(100, "online:100", "online:100"))
			f.reply(failover(h1), "OK")
			f.reply(master(h1), sentinelMasterReply(h2, "master", 1))
			f.reply(master(h2), sentinelMasterReply(h2, "master", 1))
			got := run(h0)
			if first, _, _ := strings.Cut(got.stdout, "\n"); got.code != 0 || first != "switchover: 1000000 "+h0+": writes paused" {
				t.Fatalf("switchover.sh exited %d printing\n%s\nwant its first line %q: %s", got.code, got.stdout, "switchover: 1000000 "+h0+": writes paused", got.stderr)
			}
		},
		"a replica behind: the failover asked once it holds all the master has": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			// The role, then a replica whose acknowledged offset is behind, then one resyncing, then both caught up.
			f.reply(role, masterInfo(100, "online:100", "online:100"), masterInfo(100, "online:100", "online:90"),
				masterInfo(100, "online:100", "wait_bgsave:0"), masterInfo(100, "online:100", "online:100"))
			f.reply(failover(h1), "OK")
			f.reply(master(h1), sentinelMasterReply(h2, "master", 1))
			f.reply(master(h2), sentinelMasterReply(h2, "master", 1))
			got := run(h0)
			want := strings.Join([]string{
				"switchover: 1000000.000 " + h0 + ": writes paused",
				"switchover: 1000000.400 every replica holds all " + h0 + " has",
				"switchover: 1000000.400 failover asked of the Sentinel of " + h1,
				"switchover: 1000000.400 " + h2 + " on record as the master (Sentinels still naming " + h0 + ": none)",
				"switchover: 1000000.400 " + h0 + " hands over to " + h2 + " after 0s (failover asked of " + h1 + ")",
			}, "\n")
			wantRun(t, got, 0, want)
		},
		"a Sentinel in TILT: another asked": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, masterInfo(100, "online:100", "online:100"))
			f.reply(info(h1), "# Sentinel\r\nsentinel_masters:1\r\nsentinel_tilt:1\r")
			f.reply(info(h2), "# Sentinel\r\nsentinel_masters:1\r\nsentinel_tilt:0\r")
			f.reply(failover(h1), "OK")
			f.reply(failover(h2), "OK")
			f.reply(master(h1), sentinelMasterReply(h1, "master", 1))
			f.reply(master(h2), sentinelMasterReply(h1, "master", 1))
			got := run(h0)
			want := strings.Join([]string{
				"switchover: 1000000.000 " + h0 + ": writes paused",
				"switchover: 1000000.000 every replica holds all " + h0 + " has",
				"switchover: 1000000.000 Sentinels in TILT or not answering, not asked: " + h1,
				"switchover: 1000000.000 failover asked of the Sentinel of " + h2,
				"switchover: 1000000.000 " + h1 + " on record as the master (Sentinels still naming " + h0 + ": none)",
				"switchover: 1000000.000 " + h0 + " hands over to " + h1 + " after 0s (failover asked of " + h2 + ")",
			}, "\n")
			wantRun(t, got, 0, want)
			for _, c := range f.calls() {
				if c == failover(h1) {
					t.Errorf("it asked the Sentinel in TILT (%q) while another was out of it", c)
				}
			}
		},
		"every other Sentinel in TILT: asked all the same": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, masterInfo(100, "online:100", "online:100"))
			f.reply(info(h1), "# Sentinel\r\nsentinel_tilt:1\r")
			f.reply(info(h2), "# Sentinel\r\nsentinel_tilt:1\r")
			f.reply(failover(h1), "OK")
			f.reply(master(h1), sentinelMasterReply(h2, "master", 1))
			f.reply(master(h2), sentinelMasterReply(h2, "master", 1))
			wantRun(t, run(h0).last(), 0, "switchover: "+h0+" hands over to "+h2+" after 0s (failover asked of "+h1+")")
		},
		"a replica away: no failover asked, writes unpaused after 10s": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, masterInfo(100, "online:100"))
			f.reply(failover(h1), "OK")
			wantRun(t, run(h0).last(), 0, "switchover: "+h0+" hands over to none (writes unpaused): not every replica online and holding all it has after 10s")
			calls := f.calls()
			if calls[len(calls)-1] != "127.0.0.1:6379 CLIENT UNPAUSE" {
				t.Errorf("the last call %q, want the writes unpaused", calls[len(calls)-1])
			}
			for _, c := range calls {
				if strings.Contains(c, "SENTINEL failover") {
					t.Errorf("it asked for a failover (%q) with a replica away", c)
				}
			}
		},
		"no Sentinel fails over: writes unpaused after 20s": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, masterInfo(100, "online:100", "online:100"))
			f.reply(failover(h1), inprog)
			f.unresolved(h2)
			wantRun(t, run(h0).last(), 0, "switchover: "+h0+" hands over to none (writes unpaused) after 20s (failover asked of no Sentinel)")
			if calls := f.calls(); calls[len(calls)-1] != "127.0.0.1:6379 CLIENT UNPAUSE" {
				t.Errorf("the last call %q, want the writes unpaused", calls[len(calls)-1])
			}
		},
		"the Sentinels never agree: writes unpaused after 20s": func(t *testing.T, f *fakeRedisCLI, run func(...string) scriptRun) {
			f.reply(role, masterInfo(100, "online:100", "online:100"))
			f.reply(failover(h1), "OK")
			f.reply(master(h1), sentinelMasterReply(h1, "master", 1))
			f.reply(master(h2), sentinelMasterReply(h0, "s_down,master", 1))
			wantRun(t, run(h0).last(), 0, "switchover: "+h0+" hands over to none (writes unpaused) after 20s (failover asked of "+h1+")")
		},
	})
}

// containerCommand is the script a container of the Redis pods runs (sh -c SCRIPT).
func containerCommand(t testing.TB, sts object, name string) string {
	t.Helper()
	cmd := list(container(podSpec(sts), name), "command")
	if len(cmd) != 3 || cmd[0] != "sh" || cmd[1] != "-c" {
		t.Fatalf("the %s container's command is %v, want sh -c SCRIPT", name, cmd)
	}
	return cmd[2].(string)
}

// startRun is a run of a container's start script: what it printed, how it ended, and the directory
// its paths were mapped to.
type startRun struct {
	out string
	err error
	dir string
}

// runStartScript runs a start script as the container of pod 1 (POD_NAME plantstore-redis-1, a
// password that needs escaping) with env added: find-master.sh (/etc/redis/find-master.sh) a stub
// that names master, or fails when master is "", and that records whom it was asked for in
// <dir>/asked; the directories of /run/redis and /run/sentinel mapped to <dir>; a fake redis-server
// on PATH that prints its arguments.
func runStartScript(t *testing.T, text string, env []string, master string) startRun {
	t.Helper()
	dir := t.TempDir()
	findMaster := "echo \"$1\" > " + dir + "/asked; echo " + master
	if master == "" {
		findMaster = "echo 'find-master: no master named for 45s' >&2; exit 1"
	}
	for path, text := range map[string]string{
		"bin/redis-server": "#!/bin/sh\necho \"redis-server $*\"\n",
		"find-master.sh":   findMaster + "\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, path), text, 0o755)
	}
	script := strings.NewReplacer("/etc/redis/find-master.sh", dir+"/find-master.sh", "/run/sentinel", dir, "/run/redis", dir).Replace(text)
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append([]string{"PATH=" + dir + "/bin:" + os.Getenv("PATH"), "POD_NAME=plantstore-redis-1", "REDIS_PASSWORD=" + `pa"ss\word`}, env...)
	out, err := cmd.CombinedOutput()
	return startRun{string(out), err, dir}
}

// wantFile checks a file the script wrote: its content, and mode 0600 (they hold the password).
func wantFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s (%v):\n%s", filepath.Base(path), err, firstDiff(string(b), want))
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("%s's mode is %v, want 0600: only its user may read it", filepath.Base(path), fi.Mode().Perm())
	}
}

// sentinel.sh, the Sentinel container's command, writes a configuration that watches the master
// find-master.sh names, with the password escaped, readable by its user only, and runs Sentinel on
// it; it starts none when find-master.sh fails.
func TestSentinelScript(t *testing.T) {
	me, master := scriptHosts[1], scriptHosts[0]
	for _, c := range scriptCopies(t, "sentinel.sh") {
		t.Run(c.name, func(t *testing.T) {
			run := runStartScript(t, c.text, c.env, master)
			if want := "sentinel: " + me + " watches " + master + "\nredis-server " + run.dir + "/sentinel.conf --sentinel\n"; run.err != nil || run.out != want {
				t.Fatalf("sentinel.sh ended with %v and said %q, want %q", run.err, run.out, want)
			}
			if asked, _ := os.ReadFile(filepath.Join(run.dir, "asked")); string(asked) != me+"\n" {
				t.Errorf("find-master.sh was asked for %q, want %s", asked, me)
			}
			wantFile(t, filepath.Join(run.dir, "sentinel.conf"), strings.Join([]string{"port 26379", "dir " + run.dir,
				"sentinel resolve-hostnames yes", "sentinel announce-hostnames yes", "sentinel announce-ip " + me,
				"sentinel monitor plantstore " + master + " 6379 2", "sentinel down-after-milliseconds plantstore 5000",
				"sentinel failover-timeout plantstore 30000", "sentinel parallel-syncs plantstore 1",
				`sentinel auth-pass plantstore "pa\"ss\\word"`, `sentinel sentinel-pass "pa\"ss\\word"`, `requirepass "pa\"ss\\word"`}, "\n")+"\n")

			run = runStartScript(t, c.text, c.env, "")
			if _, err := os.Stat(filepath.Join(run.dir, "sentinel.conf")); run.err == nil || strings.Contains(run.out, "redis-server") || err == nil {
				t.Errorf("with find-master.sh failing, sentinel.sh ended with %v, wrote a configuration (%v) and said:\n%s", run.err, err == nil, run.out)
			}
		})
	}
}

// redis.sh, a Sentinel-mode server's command: the password, for its clients and its master, and the
// replication settings into the files redis.conf includes, a replica of the master find-master.sh
// names unless that is the pod itself, announced by its DNS name; no server when find-master.sh fails.
func TestRedisStartScript(t *testing.T) {
	me := scriptHosts[1]
	for _, c := range scriptCopies(t, "redis.sh") {
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range []struct{ master, says, replication string }{
				{scriptHosts[0], "replica of " + scriptHosts[0], "replica-announce-ip " + me + "\nreplicaof " + scriptHosts[0] + " 6379\n"},
				{me, "master", "replica-announce-ip " + me + "\n"},
			} {
				run := runStartScript(t, c.text, c.env, tc.master)
				if want := "redis: " + me + " starts as " + tc.says + "\nredis-server /etc/redis/redis.conf\n"; run.err != nil || run.out != want {
					t.Fatalf("redis.sh ended with %v and said %q, want %q", run.err, run.out, want)
				}
				wantFile(t, filepath.Join(run.dir, "auth.conf"), `requirepass "pa\"ss\\word"`+"\n"+`masterauth "pa\"ss\\word"`+"\n")
				wantFile(t, filepath.Join(run.dir, "replication.conf"), tc.replication)
			}
			run := runStartScript(t, c.text, c.env, "")
			if _, err := os.Stat(filepath.Join(run.dir, "replication.conf")); run.err == nil || strings.Contains(run.out, "redis-server") || err == nil {
				t.Errorf("with find-master.sh failing, redis.sh ended with %v, wrote replication.conf (%v) and said:\n%s", run.err, err == nil, run.out)
			}
		})
	}
}

// last is the run with its output cut to switchover.sh's last line, its
// verdict, without its time.
func (r scriptRun) last() scriptRun {
	line := r.stdout[strings.LastIndex(r.stdout, "\n")+1:]
	if rest, ok := strings.CutPrefix(line, "switchover: "); ok {
		if _, after, ok := strings.Cut(rest, " "); ok {
			line = "switchover: " + after
		}
	}
	r.stdout = line
	return r
}

// wantRun stops the test unless the script exited with code, printing stdout.
func wantRun(t *testing.T, run scriptRun, code int, stdout string) {
	t.Helper()
	if run.code != code || run.stdout != stdout {
		t.Fatalf("the script exited %d printing\n%s\nwant %d and\n%s\nit said: %s", run.code, run.stdout, code, stdout, run.stderr)
	}
}
