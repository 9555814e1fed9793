package chart

// The gaps a platform team's review of the chart found, each closed with a
// render test: quantities, containers without an image, Bitnami's security
// context switches, schema messages that said nothing, global.storageClass,
// a LoadBalancer's settings, the Redis PVCs' labels, the pods that ran as the
// namespace's default ServiceAccount, and the test pod's scheduling.

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// valueAt builds the nested values map of a dotted path.
func valueAt(path string, v any) map[string]any {
	keys := strings.Split(path, ".")
	out := map[string]any{keys[len(keys)-1]: v}
	for i := len(keys) - 2; i >= 0; i-- {
		out = map[string]any{keys[i]: out}
	}
	return out
}

// resourcesValues are every resources value of the chart, with the workload
// and container (or init container) its value lands on, and the values that
// render that container.
var resourcesValues = []struct {
	path, kind, name, container string
	on                          map[string]any
}{
	{"resources", "Deployment", "plantstore", "plantstore", nil},
	{"redis.resources", "StatefulSet", "plantstore-redis", "redis", nil},
	{"redis.sentinel.resources", "StatefulSet", "plantstore-redis", "sentinel", valueAt("redis.architecture", "sentinel")},
	{"redis.metrics.resources", "StatefulSet", "plantstore-redis", "redis-exporter", valueAt("redis.metrics.enabled", true)},
	{"redis.metrics.resources", "StatefulSet", "plantstore-redis", "redis-exporter-auth", valueAt("redis.metrics.enabled", true)},
	{"migration.resources", "Job", "plantstore-migrate", "migrate", nil},
	{"secretsJob.resources", "Job", "plantstore-secrets", "ensure-secrets", nil},
	{"redis.roll.resources", "Job", "plantstore-redis-roll", "roll-redis", valueAt("redis.architecture", "sentinel")},
	{"tests.resources", "Pod", "plantstore-test-create-plant", "create-plant", nil},
}

// Every resources value takes Kubernetes quantities (a string of the
// quantity grammar, or a number) and nothing else: `limits.memory: lots`
// used to reach the API server.
func TestResourceQuantities(t *testing.T) {
	for _, rv := range resourcesValues {
		t.Run(rv.path+"/"+rv.container, func(t *testing.T) {
			for _, bad := range []any{"lots", "-1Gi", "1 Gi", "512MB", -1} {
				mustFail(t, []string{rv.path + ".limits.memory"}, nil, rv.on, valueAt(rv.path+".limits.memory", bad))
			}
			mustFail(t, []string{rv.path + ": Additional property limit is not allowed"}, nil, rv.on, valueAt(rv.path+".limit", map[string]any{"memory": "1Gi"}))

			for _, good := range []any{"512Mi", "0.5", "500m", "1", 1, 0.5, "1e3", "1.5Gi"} {
				r, err := renderTemplate(t, nil, rv.on, valueAt(rv.path+".requests.cpu", good), valueAt(rv.path+".limits.memory", "512Mi"))
				if err != nil {
					t.Errorf("requests.cpu %#v refused: %v", good, err)
					continue
				}
				c := byName(containers(podSpec(r.get(t, rv.kind, rv.name))), rv.container)
				if c == nil {
					t.Fatalf("%s/%s has no container %s", rv.kind, rv.name, rv.container)
				}
				if got := dig(c, "resources", "requests", "cpu"); fmt.Sprint(got) != fmt.Sprint(good) {
					t.Errorf("container %s: requests.cpu %v, want %v", rv.container, got, good)
				}
			}
		})
	}
	// The definition is shared: every resources value of the schema uses it.
	s := readFile(t, chartDir, "values.schema.json")
	if n, want := strings.Count(s, `"$ref": "#/$defs/resources"`), len(resourcesValues)-1; n != want {
		t.Errorf("%d resources values use $defs/resources, want %d", n, want)
	}
}

// An init container or a sidecar needs a name and an image.
func TestExtraContainersNeedAnImage(t *testing.T) {
	for _, key := range []string{"sidecars", "initContainers"} {
		mustFail(t, []string{key + ".0: image is required"}, nil, map[string]any{key: []any{map[string]any{"name": "proxy"}}})
		mustFail(t, []string{key + ".0: name is required"}, nil, map[string]any{key: []any{map[string]any{"image": "busybox:1.36"}}})
		mustRender(t, nil, map[string]any{key: []any{map[string]any{"name": "proxy", "image": "busybox:1.36"}}})
	}
}

// Bitnami's `enabled` switch inside a security context is refused at render,
// with what to write instead, rather than by the API server after Helm has
// begun to change the release.
func TestSecurityContextEnabledSwitchRefused(t *testing.T) {
	for _, path := range []string{"podSecurityContext", "securityContext", "redis.podSecurityContext", "redis.securityContext", "redis.metrics.containerSecurityContext"} {
		for _, enabled := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s.enabled=%v", path, enabled), func(t *testing.T) {
				mustFail(t, []string{
					fmt.Sprintf("%s.enabled (%v)", path, enabled),
					"this chart takes " + path + " as given",
					"another chart's switch",
					"Remove " + path + ".enabled",
					path + ".runAsUser: null",
				}, nil, valueAt(path+".enabled", enabled))
			})
		}
	}
	// What the message says to do renders: a field left to the platform.
	r := mustRender(t, nil, map[string]any{"podSecurityContext": map[string]any{"runAsUser": nil, "runAsGroup": nil, "fsGroup": nil}})
	sc := podSpec(r.get(t, "Deployment", "plantstore"))["securityContext"].(map[string]any)
	if _, ok := sc["runAsUser"]; ok || sc["runAsNonRoot"] != true {
		t.Errorf("podSecurityContext with runAsUser: null rendered %v, want runAsUser gone and the rest kept", sc)
	}
}

// The rules that failed with the schema library's generic words (`not`,
// if/then) fail with a sentence that says what is wrong.
func TestRefusalsSayWhatIsWrong(t *testing.T) {
	for _, key := range []string{"helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
		"app.kubernetes.io/managed-by", "app.kubernetes.io/part-of", "app.kubernetes.io/component"} {
		t.Run("commonLabels."+key, func(t *testing.T) {
			msg := mustFail(t, []string{"commonLabels." + key + ": the chart sets this label itself", "Remove " + key + " from commonLabels"},
				nil, map[string]any{"commonLabels": map[string]any{key: "x"}})
			if strings.Contains(msg, "(not)") || strings.Contains(msg, "Must not validate") {
				t.Errorf("the schema's generic message is still there: %s", msg)
			}
		})
	}
	// Labels of one's own, app.kubernetes.io ones the chart does not set among them, still pass.
	mustRender(t, nil, map[string]any{"commonLabels": map[string]any{"example.com/team": "plants", "app.kubernetes.io/created-by": "platform"}})

	for name, route := range map[string]map[string]any{
		"no parentRefs":    {"enabled": true},
		"empty parentRefs": {"enabled": true, "parentRefs": []any{}},
	} {
		t.Run("httpRoute/"+name, func(t *testing.T) {
			msg := mustFail(t, []string{"httpRoute.enabled needs httpRoute.parentRefs", "sectionName", "httpRoute.enabled=false"},
				nil, map[string]any{"httpRoute": route})
			if strings.Contains(msg, "if/then") || strings.Contains(msg, "Must validate") || strings.Contains(msg, "Array must have at least") {
				t.Errorf("the schema's generic message is still there: %s", msg)
			}
		})
	}
	// A route that is off needs no parent.
	mustRender(t, nil, map[string]any{"httpRoute": map[string]any{"enabled": false, "parentRefs": []any{}}})
}

// storageClassName of the Redis data PVCs; present false when the field is
// left out.
func redisStorageClass(t testing.TB, r rendered) (class string, present bool) {
	t.Helper()
	vct := list(r.get(t, "StatefulSet", "plantstore-redis").Obj, "spec", "volumeClaimTemplates")[0].(map[string]any)
	v, ok := dig(vct, "spec").(map[string]any)["storageClassName"]
	if !ok {
		return "", false
	}
	return v.(string), true
}

// global.storageClass is the default StorageClass of the chart's PVCs;
// redis.persistence.storageClass wins; "-" means storageClassName "" (no
// dynamic provisioning), and nothing set leaves the field out.
func TestGlobalStorageClass(t *testing.T) {
	for _, c := range []struct {
		global, redis string
		want          string
		present       bool
	}{
		{"", "", "", false},
		{"fast-ssd", "", "fast-ssd", true},
		{"fast-ssd", "slow-hdd", "slow-hdd", true},
		{"", "slow-hdd", "slow-hdd", true},
		{"-", "", "", true},
		{"fast-ssd", "-", "", true},
		{"-", "slow-hdd", "slow-hdd", true},
	} {
		t.Run(fmt.Sprintf("global=%q,redis=%q", c.global, c.redis), func(t *testing.T) {
			for _, set := range []string{"", sentinelValues} {
				r := mustRender(t, filesOf(set), map[string]any{
					"global": map[string]any{"storageClass": c.global},
					"redis":  map[string]any{"persistence": map[string]any{"storageClass": c.redis}},
				})
				if got, present := redisStorageClass(t, r); got != c.want || present != c.present {
					t.Errorf("%s: storageClassName %q (set: %v), want %q (set: %v)", set, got, present, c.want, c.present)
				}
			}
		})
	}
}

// service.loadBalancerSourceRanges and loadBalancerClass reach a
// LoadBalancer Service, externalTrafficPolicy a LoadBalancer or NodePort one;
// a ClusterIP Service gets none of them (the API server refuses them there).
func TestLoadBalancerService(t *testing.T) {
	lb := map[string]any{
		"loadBalancerSourceRanges": []any{"203.0.113.0/24", "2001:db8::/32"},
		"externalTrafficPolicy":    "Local",
		"loadBalancerClass":        "service.k8s.aws/nlb",
	}
	for _, c := range []struct {
		typ  string
		want []string // the fields rendered
	}{
		{"LoadBalancer", []string{"loadBalancerSourceRanges", "externalTrafficPolicy", "loadBalancerClass"}},
		{"NodePort", []string{"externalTrafficPolicy"}},
		{"ClusterIP", nil},
	} {
		t.Run(c.typ, func(t *testing.T) {
			values := deepCopy(t, lb)
			values["type"] = c.typ
			spec := dig(mustRender(t, nil, map[string]any{"service": values}).get(t, "Service", "plantstore").Obj, "spec").(map[string]any)
			for field, v := range lb {
				got, ok := spec[field]
				if want := slices.Contains(c.want, field); ok != want {
					t.Errorf("type %s: %s rendered %v, want rendered %v", c.typ, field, ok, want)
				} else if ok && !reflect.DeepEqual(got, v) {
					t.Errorf("type %s: %s %v, want %v", c.typ, field, got, v)
				}
			}
			// Defaults: nothing more than the type.
			spec = dig(mustRender(t, nil, valueAt("service.type", c.typ)).get(t, "Service", "plantstore").Obj, "spec").(map[string]any)
			for field := range lb {
				if _, ok := spec[field]; ok {
					t.Errorf("type %s with the defaults: %s rendered", c.typ, field)
				}
			}
		})
	}
	// The admin Service stays ClusterIP without any of them.
	r := mustRender(t, nil, map[string]any{"service": map[string]any{"type": "LoadBalancer", "externalTrafficPolicy": "Local", "loadBalancerSourceRanges": []any{"203.0.113.0/24"}}})
	admin := dig(r.get(t, "Service", "plantstore-admin").Obj, "spec").(map[string]any)
	if admin["type"] != nil && admin["type"] != "ClusterIP" || admin["externalTrafficPolicy"] != nil || admin["loadBalancerSourceRanges"] != nil {
		t.Errorf("the admin Service took the API Service's settings: %v", admin)
	}
	mustFail(t, []string{"service.externalTrafficPolicy must be one of the following"}, nil, valueAt("service.externalTrafficPolicy", "Nearest"))
	mustFail(t, []string{"service.loadBalancerSourceRanges.0: Does not match pattern"}, nil, valueAt("service.loadBalancerSourceRanges", []any{"office"}))
}

// The Redis PVCs carry commonLabels beside the selector labels they always
// had, and nothing that changes with the chart's version: a StatefulSet's
// volume claim template never changes, so such a label would fail every
// upgrade.
func TestRedisPVCsCarryCommonLabels(t *testing.T) {
	claimLabels := func(r rendered) map[string]any {
		vct := list(r.get(t, "StatefulSet", "plantstore-redis").Obj, "spec", "volumeClaimTemplates")[0].(map[string]any)
		labels, _ := dig(vct, "metadata", "labels").(map[string]any)
		return labels
	}
	selector := map[string]any{"app.kubernetes.io/name": "plantstore", "app.kubernetes.io/instance": releaseName, "app.kubernetes.io/component": "redis"}
	// The defaults: the labels every chart before gave them, so that an upgrade leaves the template alone.
	wantEqual(t, "PVC labels with the defaults (the selector labels alone)", claimLabels(mustRender(t, nil)), selector)
	values := readYAML(t, chartDir+"/"+hatches)
	common := values["commonLabels"].(map[string]any)
	for _, set := range []string{hatches, sentinelValues} {
		got := claimLabels(mustRender(t, []string{set}, map[string]any{"commonLabels": common}))
		want := maps.Clone(selector)
		maps.Copy(want, common)
		wantEqual(t, set+": PVC labels (the selector labels and commonLabels)", got, want)
	}
}

// fakeCluster answers the chart's lookups from the objects it holds, as the
// API server answers `helm upgrade`'s.
type fakeCluster struct {
	client *dynamicfake.FakeDynamicClient
}

func (c fakeCluster) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, err
	}
	return c.client.Resource(gv.WithResource(strings.ToLower(kind) + "s")), true, nil
}

// renderUpgradeOn renders the chart as `helm upgrade` does against a cluster
// holding objects: lookup finds them.
func renderUpgradeOn(t testing.TB, objects []map[string]any, maps ...map[string]any) error {
	t.Helper()
	var objs []runtime.Object
	for _, o := range objects {
		objs = append(objs, &unstructured.Unstructured{Object: deepCopy(t, o)})
	}
	cluster := fakeCluster{dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)}
	c := loadChart(t)
	top, err := chartutil.ToRenderValues(c, userValues(t, nil, maps...),
		chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, Revision: 2, IsUpgrade: true}, capabilities(t))
	if err != nil {
		return err
	}
	_, err = engine.RenderWithClientProvider(c, top, cluster)
	return err
}

// An upgrade that would change the running Redis StatefulSet's volume claim
// template (commonLabels, the StorageClass), which the API server refuses
// once Helm has begun to change the release, stops at render with what to
// do; an upgrade that leaves it alone renders.
func TestRedisClaimTemplateChangeStopsTheUpgrade(t *testing.T) {
	// The StatefulSet as the defaults, or the values given, installed it.
	running := func(values map[string]any) map[string]any {
		r := mustRender(t, nil, values)
		return r.get(t, "StatefulSet", "plantstore-redis").Obj
	}
	labels := map[string]any{"commonLabels": map[string]any{"example.com/team": "plants"}}
	fast := valueAt("global.storageClass", "fast-ssd")
	for _, c := range []struct {
		name              string
		installed, values map[string]any
		want              []string // nil: renders
	}{
		{"defaults, unchanged", nil, nil, nil},
		{"commonLabels, unchanged", labels, labels, nil},
		{"storageClass, unchanged", fast, fast, nil},
		{"the class named by redis.persistence instead of global", fast, valueAt("redis.persistence.storageClass", "fast-ssd"), nil},
		{"commonLabels added", nil, labels, []string{
			`the Redis StatefulSet plantstore-redis has PVC labels {"app.kubernetes.io/component":"redis"`,
			`"example.com/team":"plants"`, "commonLabels",
			"kubectl delete statefulset plantstore-redis -n plantstore --cascade=orphan", "set those values back",
		}},
		{"commonLabels removed", labels, nil, []string{"has PVC labels", "--cascade=orphan"}},
		{"global.storageClass set", nil, fast, []string{`storageClass "",`, `"fast-ssd"`, "global.storageClass", "--cascade=orphan"}},
		{"storageClass changed to none", fast, valueAt("redis.persistence.storageClass", "-"), []string{`storageClass "fast-ssd"`, `"-"`, "--cascade=orphan"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := renderUpgradeOn(t, []map[string]any{running(c.installed)}, c.values)
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("rendered; want the claim template's refusal")
			}
			wantContains(t, "the error", err.Error(), c.want...)
		})
	}
	// A first install (no StatefulSet yet) takes any value.
	if err := renderUpgradeOn(t, nil, labels, fast); err != nil {
		t.Errorf("with no StatefulSet running: %v", err)
	}
}

// The Redis pods and the `helm test` pod run as ServiceAccounts of their own,
// never the namespace's default, with no token on the account or the pod; the
// test pod's is a plain object of the release (Helm 3's `helm test --logs`
// reads every test hook's log as a pod's).
func TestOwnServiceAccounts(t *testing.T) {
	for _, set := range []string{"", sentinelValues, hatches} {
		r := mustRender(t, filesOf(set))
		for _, c := range []struct{ kind, name, account string }{
			{"StatefulSet", "plantstore-redis", "plantstore-redis"},
			{"Pod", "plantstore-test-create-plant", "plantstore-test"},
			{"Deployment", "plantstore", "plantstore"},
		} {
			spec := podSpec(r.get(t, c.kind, c.name))
			wantEqual(t, set+": "+c.kind+"/"+c.name+"'s ServiceAccount", spec["serviceAccountName"], c.account)
			wantEqual(t, set+": "+c.kind+"/"+c.name+": automountServiceAccountToken", spec["automountServiceAccountToken"], false)
			sa := r.get(t, "ServiceAccount", c.account)
			wantEqual(t, set+": ServiceAccount "+c.account+": automountServiceAccountToken", sa.Obj["automountServiceAccountToken"], false)
			if sa.Hook || dig(sa.Obj, "metadata", "annotations", "helm.sh/hook") != nil {
				t.Errorf("%s: ServiceAccount %s is a hook; want a plain object of the release, there before any pod that uses it", set, c.account)
			}
		}
		wantEqual(t, set+": the test ServiceAccount's component", str(r.get(t, "ServiceAccount", "plantstore-test").Obj, "metadata", "labels", "app.kubernetes.io/component"), "test")
		redis := r.get(t, "ServiceAccount", "plantstore-redis").Obj
		wantEqual(t, set+": the Redis ServiceAccount's component", str(redis, "metadata", "labels", "app.kubernetes.io/component"), "redis")
		// A rollback to a chart without it must not delete it under running pods.
		wantEqual(t, set+": the Redis ServiceAccount's resource-policy", str(redis, "metadata", "annotations", "helm.sh/resource-policy"), "keep")
	}
	// Without the chart's Redis, no Redis ServiceAccount.
	r := mustRender(t, []string{"ci/external-sentinel-values.yaml"})
	if r.lookup("ServiceAccount", "plantstore-redis") != nil {
		t.Errorf("ServiceAccount plantstore-redis rendered without the chart's Redis")
	}
	r.get(t, "ServiceAccount", "plantstore-test")
}

// tests.nodeSelector, tests.tolerations and tests.affinity place the
// `helm test` pod; by default it has none of them (not the API pods').
func TestTestPodScheduling(t *testing.T) {
	tests := map[string]any{
		"nodeSelector": map[string]any{"kubernetes.io/os": "linux", "example.com/pool": "tools"},
		"tolerations":  []any{map[string]any{"key": "example.com/dedicated", "operator": "Exists", "effect": "NoSchedule"}},
		"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "example.com/pool", "operator": "In", "values": []any{"tools"}}}}},
		}}},
	}
	spec := podSpec(mustRender(t, nil, map[string]any{"tests": tests}).get(t, "Pod", "plantstore-test-create-plant"))
	for k, want := range tests {
		wantEqual(t, "test pod "+k+" (tests."+k+")", spec[k], want)
	}
	spec = podSpec(mustRender(t, nil, map[string]any{"nodeSelector": map[string]any{"pool": "api"}}).get(t, "Pod", "plantstore-test-create-plant"))
	for k := range tests {
		if got, ok := spec[k]; ok {
			t.Errorf("test pod %s %v with the defaults, want none", k, got)
		}
	}
	mustFail(t, []string{"tests.nodeSelector.pool: Invalid type"}, nil, valueAt("tests.nodeSelector.pool", 1))
}

// NetworkPolicies are on by default: the API port from anywhere, the admin
// port only from the monitoring namespace (and metrics.cidrs), Redis only
// from the API pods and the migration Job; egress is open
// (allowExternalEgress) until it is turned off, and then only to DNS and the
// store.
func TestNetworkPolicyDefaults(t *testing.T) {
	r := mustRender(t, nil)
	api := r.get(t, "NetworkPolicy", "plantstore")
	wantEqual(t, "API policy types (egress open by default)", list(api.Obj, "spec", "policyTypes"), []any{"Ingress"})
	ingress := list(api.Obj, "spec", "ingress")
	if len(ingress) != 2 {
		t.Fatalf("API ingress rules %v, want the API port's and the admin port's", ingress)
	}
	if http := ingress[0].(map[string]any); http["from"] != nil || fmt.Sprint(dig(list(http, "ports")[0].(map[string]any), "port")) != "http" {
		t.Errorf("the API port's rule %v, want it open to anyone", http)
	}
	metrics := ingress[1].(map[string]any)
	if fmt.Sprint(dig(list(metrics, "ports")[0].(map[string]any), "port")) != "metrics" ||
		fmt.Sprint(dig(list(metrics, "from")[0].(map[string]any), "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")) != "monitoring" || len(list(metrics, "from")) != 1 {
		t.Errorf("the admin port's rule %v, want the monitoring namespace alone", metrics)
	}
	redis := r.get(t, "NetworkPolicy", "plantstore-redis")
	wantEqual(t, "Redis admits", fieldOf(each(redis.Obj, "spec", "ingress", "from"), "podSelector", "matchLabels", "app.kubernetes.io/component"), []string{"api", "migrate"})
	if got := list(redis.Obj, "spec", "egress"); len(got) != 0 {
		t.Errorf("standalone Redis egress %v, want none", got)
	}

	r = mustRender(t, nil, map[string]any{"networkPolicy": map[string]any{"allowExternalEgress": false, "metrics": map[string]any{"cidrs": []any{"10.0.0.0/24"}}}})
	api = r.get(t, "NetworkPolicy", "plantstore")
	wantEqual(t, "allowExternalEgress false: policy types", list(api.Obj, "spec", "policyTypes"), []any{"Ingress", "Egress"})
	egress := list(api.Obj, "spec", "egress")
	if len(egress) != 2 || !hasPort(list(egress[0].(map[string]any), "ports"), 53) || egress[0].(map[string]any)["to"] != nil || !hasPort(list(egress[1].(map[string]any), "ports"), 6379) {
		t.Errorf("allowExternalEgress false: egress %v, want DNS anywhere and the chart's Redis", egress)
	}
	if peers := list(list(api.Obj, "spec", "ingress")[1].(map[string]any), "from"); len(peers) != 2 || dig(peers[1].(map[string]any), "ipBlock", "cidr") != "10.0.0.0/24" {
		t.Errorf("metrics.cidrs: the admin port's peers %v", peers)
	}
	wantEqual(t, "allowExternalEgress false: the migration Job's policy types", list(r.get(t, "NetworkPolicy", "plantstore-migrate").Obj, "spec", "policyTypes"), []any{"Ingress", "Egress"})
	mustFail(t, nil, nil, valueAt("networkPolicy.metrics.cidrs", []any{"the nodes"}))
}

// The standalone Redis's clients connect through a ClusterIP Service, whose
// name resolves from the install on and while the pod restarts (a headless
// name resolves only while the pod has an address, and DNS caches keep a "no
// such name" for the zone's TTL). Helm keeps it: a rollback to a chart without
// it would delete it under API pods still draining on it. Sentinel clients
// ask the Sentinels by pod name instead, and get no such Service.
func TestStandaloneRedisAddressOutlivesRollbacks(t *testing.T) {
	r := mustRender(t, nil)
	svc := r.get(t, "Service", "plantstore-redis-master").Obj
	wantEqual(t, "Service plantstore-redis-master type", str(svc, "spec", "type"), "ClusterIP")
	if dig(svc, "spec", "publishNotReadyAddresses") != true {
		t.Error("Service plantstore-redis-master waits for Redis's readiness: after a restart the API pods would reconnect a readiness period late")
	}
	wantEqual(t, "Service plantstore-redis-master resource-policy", str(svc, "metadata", "annotations", "helm.sh/resource-policy"), "keep")
	pods, _ := dig(r.get(t, "StatefulSet", "plantstore-redis").Obj, "spec", "template", "metadata", "labels").(map[string]any)
	selector, _ := dig(svc, "spec", "selector").(map[string]any)
	if len(selector) == 0 {
		t.Error("Service plantstore-redis-master selects no pods")
	}
	for k, v := range selector {
		if pods[k] != v {
			t.Errorf("the Service selects %s=%v; the Redis pods have %v", k, v, pods[k])
		}
	}
	if !hasPort(list(svc, "spec", "ports"), 6379) {
		t.Errorf("Service plantstore-redis-master ports %v, want 6379", list(svc, "spec", "ports"))
	}
	for _, o := range []object{r.get(t, "Deployment", "plantstore"), r.get(t, "Job", "plantstore-migrate")} {
		wantEqual(t, o.String()+": PLANTSTORE_REDIS_ADDR", envOf(list(podSpec(o), "containers")[0].(map[string]any))["PLANTSTORE_REDIS_ADDR"], "plantstore-redis-master:6379")
	}
	if mustRender(t, []string{sentinelValues}).lookup("Service", "plantstore-redis-master") != nil {
		t.Error("Service plantstore-redis-master rendered in Sentinel mode")
	}
}
