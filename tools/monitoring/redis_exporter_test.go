package monitoring

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
)

// TestRedisExporterMetricsExistInRealScrape builds the Redis exporter the
// chart runs (redis.metrics: oliver006/redis_exporter from the module
// tools/k8s/redis-exporter pins), points it as the chart does (a password
// file keyed by the address) at a real redis-server with a password, the
// AOF on and a maxmemory, with a real replica attached and an AOF rewrite
// done, scrapes it, and checks that every exporter metric the dashboard and
// the rules read is exposed with the labels they use, with that Redis's
// values.
func TestRedisExporterMetricsExistInRealScrape(t *testing.T) {
	t.Parallel()
	refs, labelRefs := referencedMetrics(t, FromRedisExporter)
	if len(refs) == 0 {
		t.Fatal("the dashboard and the rules read no metric of the Redis exporter")
	}
	bin := buildRedisExporter(t)

	const password = "exporter-test-pw-K3v9"
	const maxmemory = 64 << 20
	// On 127.0.0.1: the exporter reaches its own Redis as localhost, as in the pod.
	master := redistest.StartOn(t, "127.0.0.1", "--requirepass", password, "--appendonly", "yes",
		"--maxmemory", strconv.Itoa(maxmemory), "--maxmemory-policy", "noeviction")
	host, port, _ := net.SplitHostPort(master.Addr)
	replica := redistest.Start(t, "--replicaof", host, port, "--masterauth", password)
	_, replicaPort, _ := net.SplitHostPort(replica.Addr)
	exporter := startRedisExporter(t, bin, "redis://localhost:"+port, password, false)

	rdb := master.Client()
	if err := rdb.Set(t.Context(), "plant:1", "Monstera", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The replica holds the write, and its acknowledged offset is above 0.
	redistest.WaitReplicas(t, master, 1, 20*time.Second)
	if err := rdb.BgRewriteAOF(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if !servicetest.Eventually(20*time.Second, 50*time.Millisecond, func() bool {
		return master.InfoInt("persistence", "aof_rewrite_in_progress") == 0 && master.InfoInt("persistence", "aof_rewrites") == 1
	}) {
		t.Fatal("waited 20s for the AOF rewrite to end")
	}

	families := scrape(t, exporter+"/metrics")
	checkReferenced(t, refs, labelRefs, families)

	// The values are this Redis's: memory against its maxmemory, the AOF
	// rewrite done, the replica and its lag.
	for _, c := range []struct {
		name string
		want map[string]string
		ok   func(float64) bool
		says string
	}{
		{"redis_up", nil, eq(1), "1"},
		{"redis_memory_max_bytes", nil, eq(maxmemory), strconv.Itoa(maxmemory)},
		{"redis_memory_used_bytes", nil, func(v float64) bool { return v > 0 && v < maxmemory }, "between 0 and maxmemory"},
		{"redis_aof_enabled", nil, eq(1), "1"},
		{"redis_aof_rewrite_in_progress", nil, eq(0), "0"},
		{"redis_aof_last_bgrewrite_status", nil, eq(1), "1 (ok)"},
		{"redis_aof_last_rewrite_duration_sec", nil, func(v float64) bool { return v >= 0 }, ">= 0 (a rewrite was done)"},
		{"redis_connected_slaves", nil, eq(1), "1"},
		{"redis_connected_slave_lag_seconds", map[string]string{"slave_port": replicaPort}, func(v float64) bool { return v >= 0 && v < 5 }, "the replica's, under 5 s"},
		{"redis_connected_slave_offset_bytes", map[string]string{"slave_port": replicaPort}, func(v float64) bool { return v > 0 }, "the replica's, above 0"},
		{"redis_master_repl_offset", nil, func(v float64) bool { return v > 0 }, "above 0"},
	} {
		ms := series(families[c.name], c.want)
		if len(ms) != 1 {
			t.Errorf("%s%v: %d series, want 1", c.name, c.want, len(ms))
			continue
		}
		if v := ms[0].GetGauge().GetValue(); !c.ok(v) {
			t.Errorf("%s%s = %v, want %s", c.name, labelString(ms[0]), v, c.says)
		}
	}
	if t.Failed() {
		t.Logf("the scrape held these metric families: %s", strings.Join(sortedKeys(families), ", "))
	}
}

// The exporter's /scrape?target=HOST endpoint connects to any host a caller
// names. Given the password in a file keyed by its Redis's address (as the
// chart gives it), it sends that host no password; given it in
// REDIS_PASSWORD (as charts commonly do), it sends AUTH with it: the check
// sees a leak where there is one.
func TestRedisExporterSendsNoPasswordToAForeignTarget(t *testing.T) {
	t.Parallel()
	bin := buildRedisExporter(t)
	const password = "exporter-leak-pw-V7c2"
	r := redistest.StartOn(t, "127.0.0.1", "--requirepass", password) // localhost, as in the pod
	_, port, _ := net.SplitHostPort(r.Addr)
	for _, c := range []struct {
		name     string
		env      bool
		wantLeak bool
	}{
		{"password file (the chart)", false, false},
		{"REDIS_PASSWORD", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			exporter := startRedisExporter(t, bin, "redis://localhost:"+port, password, c.env)
			// Its own Redis it reaches with the password.
			if v := series(scrape(t, exporter+"/metrics")["redis_up"], nil); len(v) != 1 || v[0].GetGauge().GetValue() != 1 {
				t.Fatalf("redis_up: %v, want 1", v)
			}
			foreign := listenForeign(t)
			resp, err := http.Get(exporter + "/scrape?target=" + url.QueryEscape(foreign.addr))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got := foreign.received(t)
			if got == "" {
				t.Fatalf("the exporter did not connect to the foreign target %s", foreign.addr)
			}
			if leaked := strings.Contains(got, password); leaked != c.wantLeak {
				t.Errorf("the foreign target received the password: %v, want %v; it received %q", leaked, c.wantLeak, got)
			}
		})
	}
}

func eq(want float64) func(float64) bool { return func(v float64) bool { return v == want } }

// buildRedisExporter returns the exporter the test cluster's image is made
// from (tools/k8s/build.sh redis-exporter).
func buildRedisExporter(t *testing.T) string {
	t.Helper()
	bin, err := k8sTool("redis-exporter")
	if err != nil {
		t.Fatalf("building the Redis exporter: %v", err)
	}
	return bin
}

// startRedisExporter runs the exporter against addr on loopback, as the
// chart's container does (redis.metrics); with env, the password in
// REDIS_PASSWORD instead of the password file. It returns the base URL. The
// exporter binds port 0 (no port is chosen before it binds one) and its port
// is read from /proc: it logs its flag, not the port it got.
func startRedisExporter(t *testing.T, bin, addr, password string, env bool) string {
	t.Helper()
	args := []string{"--redis.addr=" + addr, "--web.listen-address=127.0.0.1:0", "--log-format=json"}
	cmd := exec.Command(bin)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if env {
		cmd.Env = append(cmd.Env, "REDIS_PASSWORD="+password)
	} else {
		file := filepath.Join(t.TempDir(), "password.json")
		data, _ := json.Marshal(map[string]string{addr: password})
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--redis.password-file="+file)
	}
	cmd.Args = append(cmd.Args, args...)
	var log strings.Builder // read only once the process has exited
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("the exporter's log:\n%s", log.String())
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	base := ""
	up := servicetest.Eventually(20*time.Second, 50*time.Millisecond, func() bool {
		select {
		case <-exited:
			t.Fatalf("the exporter exited before answering /health:\n%s", log.String())
		default:
		}
		if base == "" {
			if addrs, err := listeningAddrs(cmd.Process.Pid); err == nil && len(addrs) > 0 {
				base = "http://" + addrs[0]
			}
		}
		if base == "" {
			return false
		}
		resp, err := client.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !up {
		t.Fatalf("waited 20s for the exporter's /health (listening on %q)", base)
	}
	return base
}

// foreignHost is a TCP listener that records what the first client sends
// within a second, answering +OK to each read.
type foreignHost struct {
	addr string
	got  chan string
}

func listenForeign(t *testing.T) *foreignHost {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f := &foreignHost{addr: l.Addr().String(), got: make(chan string, 1)}
	go func() {
		c, err := l.Accept()
		if err != nil {
			f.got <- ""
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		var all []byte
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				break
			}
			_, _ = io.WriteString(c, "+OK\r\n")
		}
		f.got <- string(all)
	}()
	return f
}

func (f *foreignHost) received(t *testing.T) string {
	t.Helper()
	select {
	case s := <-f.got:
		return s
	case <-time.After(10 * time.Second):
		return ""
	}
}

// scrape reads a /metrics URL in the Prometheus text format.
func scrape(t *testing.T, u string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("scraping %s: %s\n%s", u, resp.Status, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape of %s: %v", u, err)
	}
	return families
}
