package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

const sentinelValues = "ci/sentinel-values.yaml"

// envOf is a container's environment: value, or "secret:<name>/<key>".
func envOf(container map[string]any) map[string]string {
	out := map[string]string{}
	for _, e := range list(container, "env") {
		e := e.(map[string]any)
		name, _ := e["name"].(string)
		if v, ok := e["value"].(string); ok {
			out[name] = v
			continue
		}
		if ref, ok := dig(e, "valueFrom", "secretKeyRef").(map[string]any); ok {
			out[name] = fmt.Sprintf("secret:%v/%v", ref["name"], ref["key"])
		}
	}
	return out
}

// TestSentinelArchitecture: redis.architecture sentinel makes three Redis
// servers, each pod with a Sentinel, spread over zones and nodes, with a
// PodDisruptionBudget of one; the API pods and the migration Job follow the
// Sentinels by their stable DNS names, with the password for both, and wait
// for one replica's acknowledgement; the NetworkPolicies let the servers and
// Sentinels reach each other and the API reach the Sentinels.
func TestSentinelArchitecture(t *testing.T) {
	r := mustRender(t, []string{sentinelValues})
	sts := r.get(t, "StatefulSet", "plantstore-redis")
	wantEqual(t, "Redis StatefulSet replicas", dig(sts.Obj, "spec", "replicas"), 3.0)
	spec := podSpec(sts)
	sentinel := container(spec, "sentinel")
	if container(spec, "redis") == nil || sentinel == nil {
		t.Fatalf("Redis pod containers %v, want redis and sentinel", list(spec, "containers"))
	}
	wantEqual(t, "the Sentinel's password", envOf(sentinel)["REDIS_PASSWORD"], "secret:plantstore-redis/redis-password")
	wantContains(t, "the Sentinel's configuration", fmt.Sprintln(list(sentinel, "command")...), "sentinel monitor plantstore $master 6379 2", "sentinel resolve-hostnames yes",
		"sentinel announce-hostnames yes", `sentinel auth-pass plantstore "$escaped"`, `requirepass "$escaped"`)

	spread := list(spec, "topologySpreadConstraints")
	wantEqual(t, "Redis pods spread over", fieldOf(spread, "topologyKey"), []string{"topology.kubernetes.io/zone", "kubernetes.io/hostname"})
	wantEqual(t, "the components the Redis pods' spread constraints select", fieldOf(spread, "labelSelector", "matchLabels", "app.kubernetes.io/component"), []string{"redis", "redis"})
	// The zone is a hard constraint, and a zone whose nodes are tainted (a
	// node lost) is not one to fill: its server starts in another zone.
	zone := spread[0].(map[string]any)
	if str(zone, "whenUnsatisfiable") != "DoNotSchedule" || str(zone, "nodeTaintsPolicy") != "Honor" || fmt.Sprint(zone["maxSkew"]) != "1" {
		t.Errorf("the Redis pods' zone constraint is %v, want maxSkew 1, DoNotSchedule, nodeTaintsPolicy Honor", zone)
	}
	conf := r.get(t, "ConfigMap", "plantstore-redis").Obj
	wantContains(t, "redis.conf", str(conf, "data", "redis.conf"),
		// A master cut off from its replicas refuses writes from any client
		// before the Sentinels beyond the cut (down-after 5 s) promote one.
		"\nmin-replicas-to-write 1\nmin-replicas-max-lag 3\n",
		// The replication settings written at start.
		"include /run/redis/replication.conf",
		// A full resync starts at once: Redis's 5 s wait for more replicas
		// delays the end of a failover, and the Sentinel's +switch-master.
		"\nrepl-diskless-sync-delay 0\n")
	hosts := scriptHosts
	wantContains(t, "find-master.sh", str(conf, "data", "find-master.sh"),
		// It asks the three pods' Sentinels.
		"for host in "+strings.Join(hosts, " ")+"; do",
		// A restarted server never makes itself master while other servers
		// exist: only names that do not resolve (a new set) let it fall back.
		"exit 1", "Name or service not known")
	// A master about to stop hands over first: writes paused, another pod's
	// Sentinel asked to fail over.
	wantContains(t, "the Redis container's preStop", fmt.Sprint(dig(container(spec, "redis"), "lifecycle", "preStop", "exec", "command")), "/etc/redis/switchover.sh")
	wantContains(t, "switchover.sh", str(conf, "data", "switchover.sh"), "CLIENT PAUSE", "SENTINEL failover plantstore")

	wantEnv := map[string]string{
		"PLANTSTORE_REDIS_ADDR":              strings.Join(hosts, ":26379,") + ":26379",
		"PLANTSTORE_REDIS_MASTER_NAME":       "plantstore",
		"PLANTSTORE_REDIS_PASSWORD":          "secret:plantstore-redis/redis-password",
		"PLANTSTORE_REDIS_SENTINEL_PASSWORD": "secret:plantstore-redis/redis-password",
		"PLANTSTORE_REDIS_MIN_REPLICA_ACKS":  "1",
	}
	for _, o := range []object{r.get(t, "Deployment", "plantstore"), r.get(t, "Job", "plantstore-migrate")} {
		env := envOf(container(podSpec(o), "plantstore"))
		if o.Kind() == "Job" {
			env = envOf(list(podSpec(o), "containers")[0].(map[string]any))
		}
		for k, v := range wantEnv {
			wantEqual(t, o.String()+": "+k, env[k], v)
		}
	}

	svc := r.get(t, "Service", "plantstore-redis").Obj
	if dig(svc, "spec", "publishNotReadyAddresses") != true {
		t.Error("the Redis Service does not publish starting pods: a starting pod would not find the others")
	}
	if !hasPort(list(svc, "spec", "ports"), 26379) {
		t.Errorf("the Redis Service has no Sentinel port: %v", list(svc, "spec", "ports"))
	}
	wantEqual(t, "Redis PodDisruptionBudget maxUnavailable", dig(r.get(t, "PodDisruptionBudget", "plantstore-redis").Obj, "spec", "maxUnavailable"), 1.0)

	redisPolicy := r.get(t, "NetworkPolicy", "plantstore-redis").Obj
	if eg := list(redisPolicy, "spec", "egress"); len(eg) != 2 || !hasPort(list(eg[1].(map[string]any), "ports"), 6379) || !hasPort(list(eg[1].(map[string]any), "ports"), 26379) {
		t.Errorf("Redis egress %v, want DNS and the other servers and Sentinels", eg)
	}
	peers := slices.ContainsFunc(each(redisPolicy, "spec", "ingress"), func(in map[string]any) bool {
		from := list(in, "from")
		return len(from) == 1 && dig(from[0].(map[string]any), "podSelector", "matchLabels", "app.kubernetes.io/component") == "redis"
	})
	if !peers {
		t.Error("the Redis NetworkPolicy does not admit the other Redis pods")
	}
	restricted := mustRender(t, []string{sentinelValues}, map[string]any{"networkPolicy": map[string]any{"allowExternalEgress": false}})
	if !hasPort(each(restricted.get(t, "NetworkPolicy", "plantstore").Obj, "spec", "egress", "ports"), 26379) {
		t.Error("the API's NetworkPolicy does not let it reach the Sentinels")
	}
}

// hasPort reports whether one of the ports (of a Service, a policy rule) is port.
func hasPort[T any](ports []T, port any) bool {
	for _, p := range ports {
		if m, _ := any(p).(map[string]any); fmt.Sprint(m["port"]) == fmt.Sprint(port) {
			return true
		}
	}
	return false
}

// TestRedisRollsInRoleOrder: with redis.updateStrategy RollingUpdate (the
// default) a Sentinel-mode StatefulSet is OnDelete and a post-upgrade and
// post-rollback hook rolls it (replicas first, the master last), with a
// Role that may get that StatefulSet and get and delete its pods and
// nothing else, reaching the Sentinels through the NetworkPolicy. Standalone
// the controller rolls; OnDelete rolls nothing.
func TestRedisRollsInRoleOrder(t *testing.T) {
	strategy := func(v string) map[string]any { return valueAt("redis.updateStrategy", map[string]any{"type": v}) }
	for _, tc := range []struct {
		name     string
		files    []string
		values   []map[string]any
		sts      string // the StatefulSet's updateStrategy.type
		pods     int    // pods the hook may restart; 0: no hook
		nameArgs []string
	}{
		{"sentinel", []string{sentinelValues}, nil, "OnDelete", 3, []string{"--partition=0"}},
		{"five servers, a partition", []string{sentinelValues}, []map[string]any{valueAt("redis.sentinel.replicas", 5), valueAt("redis.sentinel.quorum", 3),
			valueAt("redis.updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": 2}})}, "OnDelete", 5, []string{"--partition=2"}},
		{"sentinel, OnDelete", []string{sentinelValues}, []map[string]any{strategy("OnDelete")}, "OnDelete", 0, nil},
		{"standalone", nil, nil, "RollingUpdate", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, tc.files, tc.values...)
			wantEqual(t, "StatefulSet updateStrategy", str(r.get(t, "StatefulSet", "plantstore-redis").Obj, "spec", "updateStrategy", "type"), tc.sts)
			job := r.lookup("Job", "plantstore-redis-roll")
			if tc.pods == 0 {
				if job != nil {
					t.Fatal("a roll Job is rendered")
				}
				return
			}
			if job == nil {
				t.Fatal("no roll Job")
			}
			for _, kind := range []string{"Job", "Role", "RoleBinding", "ServiceAccount"} {
				if o := r.get(t, kind, "plantstore-redis-roll"); !o.Hook || !strings.Contains(o.Text, "post-upgrade,post-rollback") {
					t.Errorf("%s is not a post-upgrade,post-rollback hook", kind)
				}
			}
			roll := container(podSpec(*job), "roll-redis")
			wantContains(t, "args", fmt.Sprint(list(roll, "args")), append([]string{"roll-redis", "--statefulset=plantstore-redis", "--master-name=plantstore",
				"--sentinels=plantstore-redis-0.plantstore-redis.plantstore.svc:26379,"}, tc.nameArgs...)...)
			wantEqual(t, "the Sentinels' password", envOf(roll)["PLANTSTORE_REDIS_SENTINEL_PASSWORD"], "secret:plantstore-redis/redis-password")
			var pods []string
			for i := range tc.pods {
				pods = append(pods, fmt.Sprintf("plantstore-redis-%d", i))
			}
			wantRules := []any{
				map[string]any{"apiGroups": []any{"apps"}, "resources": []any{"statefulsets"}, "resourceNames": []any{"plantstore-redis"}, "verbs": []any{"get"}},
				map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "resourceNames": toAny(pods), "verbs": []any{"get", "delete"}},
			}
			wantEqual(t, "Role rules", list(r.get(t, "Role", "plantstore-redis-roll").Obj, "rules"), wantRules)
			np := r.get(t, "NetworkPolicy", "plantstore-redis")
			if !strings.Contains(np.Text, "app.kubernetes.io/component: redis-roll") {
				t.Error("the Redis NetworkPolicy does not let the roll Job reach the Sentinels")
			}
		})
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Values the API's environment takes as the chart decides them:
// config.redis.minReplicaAcks null is 1 with the chart's Sentinel and 0 with
// its standalone Redis, a number decides; config.docsPage (the reference page,
// GET /docs) is on by default, and an operator who wants none turns it off.
func TestAPIEnvironmentFromValues(t *testing.T) {
	const acks, docs = "PLANTSTORE_REDIS_MIN_REPLICA_ACKS", "PLANTSTORE_DOCS_PAGE"
	for _, tc := range []struct {
		name      string
		files     []string
		values    map[string]any
		env, want string
	}{
		{"minReplicaAcks/standalone", nil, nil, acks, "0"},
		{"minReplicaAcks/sentinel", []string{sentinelValues}, nil, acks, "1"},
		{"minReplicaAcks/sentinel, 0 asked for", []string{sentinelValues}, valueAt("config.redis.minReplicaAcks", 0), acks, "0"},
		{"minReplicaAcks/sentinel, 2 asked for", []string{sentinelValues}, valueAt("config.redis.minReplicaAcks", 2), acks, "2"},
		{"docsPage/default", nil, nil, docs, "true"},
		{"docsPage/false", nil, valueAt("config.docsPage", false), docs, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantEqual(t, tc.env, envOf(api(t, mustRender(t, tc.files, tc.values)))[tc.env], tc.want)
		})
	}
}

// TestStandaloneUnchangedBySentinelValues: a release whose values predate
// redis.architecture (helm upgrade --reuse-values within 1.2) renders the
// standalone Redis exactly as the default does: nothing restarts it.
func TestStandaloneUnchangedBySentinelValues(t *testing.T) {
	before := reuseValuesWithout(t, "architecture", "sentinel")
	now := mustRender(t, nil)
	for _, kind := range []string{"StatefulSet", "ConfigMap", "Service"} {
		if a, b := before.get(t, kind, "plantstore-redis").Text, now.get(t, kind, "plantstore-redis").Text; a != b {
			t.Errorf("the Redis %s differs without redis.architecture:\n%s\n---\n%s", kind, a, b)
		}
	}
	if container(podSpec(now.get(t, "StatefulSet", "plantstore-redis")), "sentinel") != nil {
		t.Error("a standalone Redis pod has a Sentinel")
	}
}

// TestSentinelValuesRefused: values that would break the set fail the
// render, saying why.
func TestSentinelValuesRefused(t *testing.T) {
	for _, tc := range []struct {
		sentinel map[string]any
		want     string
	}{
		{map[string]any{"replicas": 4}, "redis.sentinel.replicas 4 is even"},
		{map[string]any{"minReplicasToWrite": 3}, "redis.sentinel.minReplicasToWrite 3 needs more than that many Redis servers"},
		{map[string]any{"minReplicasMaxLag": 5}, "redis.sentinel.minReplicasMaxLag 5s must be below downAfterMilliseconds (5000ms)"},
	} {
		mustFail(t, []string{tc.want}, []string{sentinelValues}, map[string]any{"redis": map[string]any{"sentinel": tc.sentinel}})
	}
	// Off, and with a lag the down-after allows: rendered.
	for _, sentinel := range []map[string]any{{"minReplicasToWrite": 0, "minReplicasMaxLag": 60}, {"minReplicasMaxLag": 9, "downAfterMilliseconds": 10000}} {
		if _, err := renderTemplate(t, []string{sentinelValues}, map[string]any{"redis": map[string]any{"sentinel": sentinel}}); err != nil {
			t.Errorf("redis.sentinel %v: %v", sentinel, err)
		}
	}
}
