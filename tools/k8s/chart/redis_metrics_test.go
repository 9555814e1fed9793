package chart

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// metricsOn is redis.metrics.enabled with the objects that go with it.
func metricsOn(more ...map[string]any) []map[string]any {
	return append([]map[string]any{{
		"redis":          map[string]any{"metrics": map[string]any{"enabled": true}},
		"serviceMonitor": map[string]any{"enabled": true},
		"networkPolicy":  map[string]any{"enabled": true},
	}}, more...)
}

// redisPodTemplate is the Redis StatefulSet's pod template.
func redisPodTemplate(t testing.TB, r rendered) map[string]any {
	t.Helper()
	tpl, _ := dig(r.get(t, "StatefulSet", "plantstore-redis").Obj, "spec", "template").(map[string]any)
	if tpl == nil {
		t.Fatal("the Redis StatefulSet has no pod template")
	}
	return tpl
}

// With the exporter off, the Redis pod template is what it was without the
// value (the values of an older chart, helm upgrade --reuse-values), byte
// for byte, and what it is with the exporter on less the exporter's init
// container, container and volume: turning the value on adds them and
// nothing else, and leaving it off changes nothing (a changed template
// would restart Redis, or leave it on an older revision).
func TestRedisMetricsOffLeavesTheRedisPodUnchanged(t *testing.T) {
	off := mustRender(t, nil)
	// helm upgrade --reuse-values renders with the installed chart's values:
	// an older chart's have no redis.metrics.
	old := reuseValuesWithout(t, "metrics")
	if a, b := off.get(t, "StatefulSet", "plantstore-redis").Text, old.get(t, "StatefulSet", "plantstore-redis").Text; a != b {
		t.Errorf("the Redis StatefulSet with redis.metrics off differs from the one without the value:\n%s\n---\n%s", a, b)
	}

	on := mustRender(t, nil, metricsOn()...)
	tplOff, tplOn := redisPodTemplate(t, off), redisPodTemplate(t, on)
	spec := tplOn["spec"].(map[string]any)
	if len(list(spec, "initContainers")) != 1 {
		t.Fatalf("with the exporter on: init containers %v, want the exporter's one", list(spec, "initContainers"))
	}
	delete(spec, "initContainers")
	spec["containers"] = without(list(spec, "containers"), "redis-exporter")
	spec["volumes"] = without(list(spec, "volumes"), "redis-exporter-auth")
	if !reflect.DeepEqual(tplOff, tplOn) {
		a, _ := json.MarshalIndent(tplOff, "", " ")
		b, _ := json.MarshalIndent(tplOn, "", " ")
		t.Errorf("the Redis pod template with the exporter on, less its init container, container and volume, differs from the one with it off:\n%s\n---\n%s", a, b)
	}
	if strings.Contains(off.Manifest, "redis-exporter") || strings.Contains(off.Manifest, "9121") {
		t.Error("with redis.metrics off the manifest still names the exporter")
	}
	if len(off.find("ServiceMonitor")) != 0 {
		t.Error("a ServiceMonitor without serviceMonitor.enabled")
	}
}

// without returns the named items (containers, volumes) less the one called name.
func without(items []any, name string) []any {
	var out []any
	for _, it := range items {
		if str(it.(map[string]any), "name") != name {
			out = append(out, it)
		}
	}
	return out
}

// With the exporter on: the sidecar on the pod's loopback, restricted, its
// named port, no readiness probe (the pod's readiness stays Redis's), its
// password from the Redis Secret through the init container and a file,
// never in an argument or in the exporter's environment.
func TestRedisMetricsSidecar(t *testing.T) {
	for _, c := range []struct {
		name        string
		vals        map[string]any
		secret, key string
	}{
		{"generated secret", nil, "plantstore-redis", "redis-password"},
		{"existing secret", map[string]any{"redis": map[string]any{"auth": map[string]any{"existingSecret": "my-redis", "existingSecretKey": "pw"}}}, "my-redis", "pw"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := mustRender(t, nil, metricsOn(c.vals)...)
			spec := podSpec(r.get(t, "StatefulSet", "plantstore-redis"))
			exp := named(t, list(spec, "containers"), "redis-exporter")
			wantEqual(t, "exporter image", str(exp, "image"), "oliver006/redis_exporter:v1.61.0")
			wantContains(t, "exporter args", fmt.Sprint(list(exp, "args")),
				"--redis.addr=redis://localhost:6379", "--redis.password-file=/run/redis-exporter/password.json", "--web.listen-address=:9121")
			if len(list(exp, "command")) != 0 {
				t.Errorf("exporter command %v: the image's entrypoint runs it", list(exp, "command"))
			}
			for _, e := range list(exp, "env") {
				t.Errorf("the exporter has environment %v: its password comes from the file only", e)
			}
			ports := list(exp, "ports")
			if len(ports) != 1 || str(ports[0].(map[string]any), "name") != "metrics" || fmt.Sprint(dig(ports[0].(map[string]any), "containerPort")) != "9121" {
				t.Errorf("exporter ports %v, want metrics 9121", ports)
			}
			if dig(exp, "readinessProbe") != nil {
				t.Error("the exporter has a readiness probe: its failure would take Redis out of its Service")
			}
			wantEqual(t, "exporter liveness probe's GET", str(exp, "livenessProbe", "httpGet", "path"), "/health")
			if dig(exp, "resources", "requests") == nil || dig(exp, "resources", "limits", "memory") == nil {
				t.Errorf("exporter resources %v", dig(exp, "resources"))
			}
			init := named(t, list(spec, "initContainers"), "redis-exporter-auth")
			for _, ctr := range []map[string]any{exp, init} {
				restricted(t, ctr)
			}
			wantEqual(t, "init container env's length", len(list(init, "env")), 1)
			wantEqual(t, "init container env", envOf(init), map[string]string{"REDIS_PASSWORD": "secret:" + c.secret + "/" + c.key})
			// The Redis container reads the same Secret.
			redis := named(t, list(spec, "containers"), "redis")
			wantEqual(t, "the Redis container's Secret (the exporter's)", str(list(redis, "env")[0].(map[string]any), "valueFrom", "secretKeyRef", "name"), c.secret)
			wantEqual(t, "the password file's volume medium", str(named(t, list(spec, "volumes"), "redis-exporter-auth"), "emptyDir", "medium"), "Memory")
			// No password in the pod spec: every password variable comes from
			// a Secret, and no argument passes one (the chart never knows the
			// password: it is generated in the cluster or the user's Secret).
			for _, ctr := range containers(spec) {
				for _, e := range each(ctr, "env") {
					if n := str(e, "name"); strings.Contains(n, "PASSWORD") || strings.Contains(n, "AUTH") {
						if _, literal := e["value"]; literal || str(e, "valueFrom", "secretKeyRef", "name") == "" {
							t.Errorf("container %s: %s is not from a Secret: %v", str(ctr, "name"), n, e)
						}
					}
				}
				for _, a := range append(list(ctr, "command"), list(ctr, "args")...) {
					if s, _ := a.(string); strings.Contains(s, "--redis.password=") || strings.Contains(s, "requirepass ") && !strings.Contains(s, "$escaped") {
						t.Errorf("container %s passes a password in an argument: %q", str(ctr, "name"), s)
					}
				}
			}
		})
	}
}

// named is byName failing the test without the item.
func named(t testing.TB, items []any, name string) map[string]any {
	t.Helper()
	m := byName(items, name)
	if m == nil {
		t.Fatalf("no %q among %v", name, items)
	}
	return m
}

// restricted checks a container's securityContext against Pod Security
// restricted (and a read-only root filesystem).
func restricted(t testing.TB, ctr map[string]any) {
	t.Helper()
	sc, _ := ctr["securityContext"].(map[string]any)
	if dig(sc, "runAsNonRoot") != true || dig(sc, "allowPrivilegeEscalation") != false || dig(sc, "readOnlyRootFilesystem") != true ||
		fmt.Sprint(dig(sc, "capabilities", "drop")) != "[ALL]" || str(sc, "seccompProfile", "type") != "RuntimeDefault" {
		t.Errorf("container %s: securityContext %v is not restricted", str(ctr, "name"), sc)
	}
}

// The init container's script, run for real with sh: the password file is
// JSON mapping the exporter's --redis.addr to the password, whatever quotes
// and backslashes the password holds, readable by its owner only.
func TestRedisMetricsPasswordFile(t *testing.T) {
	r := mustRender(t, nil, metricsOn()...)
	spec := podSpec(r.get(t, "StatefulSet", "plantstore-redis"))
	init := named(t, list(spec, "initContainers"), "redis-exporter-auth")
	cmd := list(init, "command")
	if len(cmd) != 3 || cmd[0] != "sh" || cmd[1] != "-c" {
		t.Fatalf("init command %v, want sh -c SCRIPT", cmd)
	}
	mount := str(list(init, "volumeMounts")[0].(map[string]any), "mountPath")
	var addr, file string
	for _, a := range list(named(t, list(spec, "containers"), "redis-exporter"), "args") {
		if v, ok := strings.CutPrefix(a.(string), "--redis.addr="); ok {
			addr = v
		}
		if v, ok := strings.CutPrefix(a.(string), "--redis.password-file="); ok {
			file = v
		}
	}
	if !strings.HasPrefix(file, mount+"/") {
		t.Fatalf("the exporter reads %s, the init container writes under %s", file, mount)
	}
	for _, pw := range []string{"plain0123456789", `quo"te and back\slash \" \\`, "dollar $HOME $(x) `y` 'z' %s %d"} {
		dir := t.TempDir()
		script := strings.ReplaceAll(cmd[2].(string), mount, dir)
		run := exec.Command("sh", "-c", script)
		run.Env = []string{"PATH=" + os.Getenv("PATH"), "REDIS_PASSWORD=" + pw}
		if out, err := run.CombinedOutput(); err != nil {
			t.Fatalf("the init script: %v\n%s", err, out)
		}
		path := filepath.Join(dir, strings.TrimPrefix(file, mount+"/"))
		b := readFile(t, path)
		var got map[string]string
		if err := json.Unmarshal([]byte(b), &got); err != nil {
			t.Fatalf("password %q: the file is not JSON: %v\n%s", pw, err, b)
		}
		if len(got) != 1 || got[addr] != pw {
			t.Errorf("password %q: the file maps %v, want {%q: the password}", pw, got, addr)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("password file mode %v, %v; want 0600", fi.Mode().Perm(), err)
		}
	}
}

// Scraping: the Redis Service gains the metrics port, a ServiceMonitor of its
// own selects only it with the job pinned to <jobName>-redis (the
// dashboard's Redis row selects job=~"$job-redis"), and the Redis
// NetworkPolicy admits the port from the API metrics rule's peers, and
// nothing else new.
func TestRedisMetricsScrapedAndAdmitted(t *testing.T) {
	peers := map[string]any{"networkPolicy": map[string]any{"metrics": map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "observability"}},
		"podSelector":       map[string]any{"matchLabels": map[string]any{"app": "prometheus"}},
	}}}
	jobName := map[string]any{"serviceMonitor": map[string]any{"jobName": "shop"}}
	off := mustRender(t, nil, map[string]any{"serviceMonitor": map[string]any{"enabled": true}, "networkPolicy": map[string]any{"enabled": true}}, peers)
	on := mustRender(t, nil, metricsOn(peers, jobName)...)

	port := byName(list(r0(t, on, "Service", "plantstore-redis"), "spec", "ports"), "metrics")
	if port == nil || fmt.Sprint(port["port"]) != "9121" || str(port, "targetPort") != "metrics" {
		t.Errorf("the Redis Service's metrics port %v, want 9121 -> metrics", port)
	}
	for _, p := range list(r0(t, off, "Service", "plantstore-redis"), "spec", "ports") {
		if str(p.(map[string]any), "name") != "redis" {
			t.Errorf("with the exporter off the Redis Service has port %v", p)
		}
	}

	sm := r0(t, on, "ServiceMonitor", "plantstore-redis")
	wantEqual(t, "the Services the Redis ServiceMonitor selects", monitored(on, sm), []string{"plantstore-redis"})
	eps := list(sm, "spec", "endpoints")
	if !wantEqual(t, "endpoints' ports", fieldOf(eps, "port"), []string{"metrics"}) {
		t.FailNow()
	}
	relabel := list(eps[0].(map[string]any), "relabelings")
	if len(relabel) == 0 || str(relabel[0].(map[string]any), "targetLabel") != "job" || str(relabel[0].(map[string]any), "replacement") != "shop-redis" {
		t.Errorf("relabelings %v, want job pinned to shop-redis", relabel)
	}
	wantEqual(t, "the Redis ServiceMonitor's release label (the API's)", str(sm, "metadata", "labels", "release"), str(r0(t, on, "ServiceMonitor", "plantstore"), "metadata", "labels", "release"))
	if len(mustRender(t, nil, map[string]any{"redis": map[string]any{"metrics": map[string]any{"enabled": true}}}).find("ServiceMonitor")) != 0 {
		t.Error("a ServiceMonitor without serviceMonitor.enabled")
	}

	np := r0(t, on, "NetworkPolicy", "plantstore-redis")
	ingOff := list(r0(t, off, "NetworkPolicy", "plantstore-redis"), "spec", "ingress")
	ingOn := list(np, "spec", "ingress")
	if len(ingOn) != len(ingOff)+1 || !reflect.DeepEqual(ingOn[:len(ingOff)], ingOff) {
		t.Fatalf("the Redis policy's ingress with the exporter on %v, want the rules without it %v and one more", ingOn, ingOff)
	}
	rule := ingOn[len(ingOff)].(map[string]any)
	apiRule := metricsRule(t, r0(t, on, "NetworkPolicy", "plantstore"))
	if fmt.Sprint(list(rule, "ports")) != "[map[port:metrics protocol:TCP]]" || !reflect.DeepEqual(rule["from"], apiRule["from"]) {
		t.Errorf("the exporter's rule %v, want port metrics from the API metrics rule's peers %v", rule, apiRule["from"])
	}
	if !reflect.DeepEqual(dig(np, "spec", "egress"), []any{}) {
		t.Errorf("the Redis policy's egress %v, want none", dig(np, "spec", "egress"))
	}
}

func r0(t testing.TB, r rendered, kind, name string) map[string]any {
	t.Helper()
	return r.get(t, kind, name).Obj
}

// metricsRule is the API policy's ingress rule for its metrics port.
func metricsRule(t testing.TB, np map[string]any) map[string]any {
	t.Helper()
	for _, rule := range each(np, "spec", "ingress") {
		if hasPort(list(rule, "ports"), "metrics") {
			return rule
		}
	}
	t.Fatal("the API policy has no metrics rule")
	return nil
}

// The chart's default exporter image is the release the test cluster builds
// from its module (tools/k8s/redis-exporter; build.sh stamps its version,
// images.sh imports it under the chart's default name): they move together.
func TestRedisMetricsImageIsTheBuiltModule(t *testing.T) {
	var version string
	for _, line := range strings.Split(readFile(t, "..", "redis-exporter", "go.mod"), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/oliver006/redis_exporter" {
			version = f[1]
		}
	}
	img, _ := dig(loadChart(t).Values, "redis", "metrics", "image").(map[string]any)
	if version == "" || str(img, "repository") != "oliver006/redis_exporter" || str(img, "tag") != version {
		t.Errorf("redis.metrics.image %v; tools/k8s/redis-exporter builds github.com/oliver006/redis_exporter %q", img, version)
	}
	wantContains(t, "images.sh (the exporter's build)", readFile(t, "..", "images.sh"), "image docker.io/oliver006/redis_exporter:"+version+" ")
	wantContains(t, "build.sh (the exporter's version stamp)", readFile(t, "..", "build.sh"), "-X main.BuildVersion="+version+" ")
}
