package chart

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The value set that uses every escape hatch (validate.sh installs it).
const hatches = "ci/escape-hatches-values.yaml"

// everyObjectValues adds, to the escape hatches' value set, the objects it
// leaves out: the HPA (autoscaling), the tokens and subscribers Secrets the
// chart renders from values, the Redis exporter's ServiceMonitor.
var everyObjectValues = map[string]any{
	"autoscaling": map[string]any{"enabled": true},
	"redis":       map[string]any{"metrics": map[string]any{"enabled": true}},
	"auth":        map[string]any{"tokens": []any{"sha256:" + strings.Repeat("ab", 32) + " name=ci"}},
	"webhooks":    map[string]any{"subscribers": []any{"https://hooks.example.com/plants whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
}

// commonLabels land on every object the chart renders, hooks and the test
// pod included, and on every pod template; never in a selector.
// commonAnnotations land on every object.
func TestCommonLabelsAndAnnotationsOnEveryObject(t *testing.T) {
	values := readYAML(t, chartDir+"/"+hatches)
	common, _ := values["commonLabels"].(map[string]any)
	annotations, _ := values["commonAnnotations"].(map[string]any)
	if len(common) == 0 || len(annotations) == 0 {
		t.Fatalf("%s sets no commonLabels or commonAnnotations", hatches)
	}
	r := mustRender(t, []string{hatches}, everyObjectValues)
	kinds := map[string]bool{}
	selectors := 0
	for _, o := range r.Objects {
		kinds[o.Kind()] = true
		labels, _ := dig(o.Obj, "metadata", "labels").(map[string]any)
		for k, v := range common {
			if labels[k] != v {
				t.Errorf("%s: label %s=%v, want commonLabels' %v", o, k, labels[k], v)
			}
		}
		got, _ := dig(o.Obj, "metadata", "annotations").(map[string]any)
		for k, v := range annotations {
			if got[k] != v {
				t.Errorf("%s: annotation %s=%v, want commonAnnotations' %v", o, k, got[k], v)
			}
		}
		if podSpec(o) != nil && o.Kind() != "Pod" {
			podLabels, _ := dig(o.Obj, "spec", "template", "metadata", "labels").(map[string]any)
			for k, v := range common {
				if own, ok := ownPodLabels(t, values, o)[k]; ok {
					v = own // the pod's own labels win
				}
				if podLabels[k] != v {
					t.Errorf("%s: pod template label %s=%v, want %v", o, k, podLabels[k], v)
				}
			}
		}
		// Every label selector: a selector, podSelector, namespaceSelector or labelSelector field.
		walk(o.Obj, "", func(path, key string, sel any) bool {
			if key != "selector" && key != "podSelector" && key != "namespaceSelector" && key != "labelSelector" {
				return true
			}
			selectors++
			b, _ := yaml.Marshal(sel)
			for k := range common {
				if strings.Contains(string(b), k+":") {
					t.Errorf("%s: commonLabels' %s in the selector %s:\n%s", o, k, path, b)
				}
			}
			return false
		})
	}
	// The Secrets the hook Job creates are not rendered: it labels and annotates them.
	args := map[string]bool{}
	for _, c := range list(podSpec(r.get(t, "Job", "plantstore-secrets")), "containers") {
		for _, a := range list(c.(map[string]any), "args") {
			args[a.(string)] = true
		}
	}
	for k, v := range common {
		if a := fmt.Sprintf("--label=%s=%s", k, v); !args[a] {
			t.Errorf("the secrets Job has no %s", a)
		}
	}
	for k, v := range annotations {
		if a := fmt.Sprintf("--annotation=%s=%s", k, v); !args[a] {
			t.Errorf("the secrets Job has no %s", a)
		}
	}
	for _, k := range []string{"Deployment", "StatefulSet", "Service", "ConfigMap", "Secret", "ServiceAccount", "Job", "Role", "RoleBinding",
		"Pod", "NetworkPolicy", "PodDisruptionBudget", "HorizontalPodAutoscaler", "Ingress", "ServiceMonitor", "PrometheusRule"} {
		if !kinds[k] {
			t.Errorf("no %s rendered: the check does not cover every kind of the chart", k)
		}
	}
	if selectors < 10 {
		t.Errorf("only %d selectors seen: the selector check does not look where it should", selectors)
	}
}

// ownPodLabels are the labels the values give a workload's pods, which win
// over commonLabels.
func ownPodLabels(t testing.TB, values map[string]any, o object) map[string]any {
	var m any
	switch str(o.Obj, "spec", "template", "metadata", "labels", "app.kubernetes.io/component") {
	case "api":
		m = values["podLabels"]
	case "migrate":
		m = dig(values, "migration", "podLabels")
	case "secrets":
		m = dig(values, "secretsJob", "podLabels")
	}
	out, _ := m.(map[string]any)
	return out
}

// images returns the image of every container and init container of every
// pod the render holds.
func images(r rendered) map[string]string {
	out := map[string]string{}
	for _, o := range r.Objects {
		for _, c := range containers(podSpec(o)) {
			out[o.Kind()+"/"+o.Name()+"/"+str(c, "name")] = str(c, "image")
		}
	}
	return out
}

// global.imageRegistry takes every image the chart renders, for every value
// set of ci/, wherever its repository says it comes from; without it the
// images are what they were.
func TestGlobalImageRegistryTakesEveryImage(t *testing.T) {
	const mirror = "mirror.example.internal/hub"
	for _, set := range valueSets(t) {
		t.Run(set, func(t *testing.T) {
			r := mustRender(t, []string{set}, map[string]any{"global": map[string]any{"imageRegistry": mirror}})
			imgs := images(r)
			if len(imgs) == 0 {
				t.Fatal("no containers rendered")
			}
			for where, img := range imgs {
				if !strings.HasPrefix(img, mirror+"/") {
					t.Errorf("%s: image %q not from global.imageRegistry %s", where, img, mirror)
				}
			}
		})
	}
	appVersion := str(readYAML(t, chartDir+"/Chart.yaml"), "appVersion")
	for _, c := range []struct {
		name   string
		values map[string]any
		want   map[string]string // container (kind/name/container) to image
	}{
		{"defaults", nil, map[string]string{
			"Deployment/plantstore/plantstore":              "ghcr.io/plantstore/plantstore:" + appVersion,
			"StatefulSet/plantstore-redis/redis":            "redis:7.2-alpine",
			"Pod/plantstore-test-create-plant/create-plant": "curlimages/curl:8.11.1",
			"Job/plantstore-migrate/migrate":                "ghcr.io/plantstore/plantstore:" + appVersion,
			"Job/plantstore-secrets/ensure-secrets":         "ghcr.io/plantstore/plantstore:" + appVersion,
		}},
		{"global.imageRegistry", map[string]any{"global": map[string]any{"imageRegistry": "mirror.example:5000/"}}, map[string]string{
			"Deployment/plantstore/plantstore":              "mirror.example:5000/plantstore/plantstore:" + appVersion,
			"StatefulSet/plantstore-redis/redis":            "mirror.example:5000/redis:7.2-alpine",
			"Pod/plantstore-test-create-plant/create-plant": "mirror.example:5000/curlimages/curl:8.11.1",
			"Job/plantstore-secrets/ensure-secrets":         "mirror.example:5000/plantstore/plantstore:" + appVersion,
		}},
		{"each image's registry, global.imageRegistry winning", map[string]any{
			"global": map[string]any{"imageRegistry": "mirror.example"},
			"image":  map[string]any{"registry": "ignored.example", "digest": "sha256:" + strings.Repeat("0", 64)},
			"redis":  map[string]any{"image": map[string]any{"registry": "ignored.example", "repository": "docker.io/library/redis"}},
		}, map[string]string{
			"Deployment/plantstore/plantstore":   "mirror.example/plantstore/plantstore:" + appVersion + "@sha256:" + strings.Repeat("0", 64),
			"StatefulSet/plantstore-redis/redis": "mirror.example/library/redis:7.2-alpine",
		}},
		{"each image's registry", map[string]any{
			"image": map[string]any{"registry": "one.example"},
			"redis": map[string]any{"image": map[string]any{"registry": "two.example/proxy", "repository": "localhost/redis"}},
			"tests": map[string]any{"image": map[string]any{"registry": "three.example", "repository": "localhost:5000/curlimages/curl"}},
		}, map[string]string{
			"Deployment/plantstore/plantstore":              "one.example/plantstore/plantstore:" + appVersion,
			"StatefulSet/plantstore-redis/redis":            "two.example/proxy/redis:7.2-alpine",
			"Pod/plantstore-test-create-plant/create-plant": "three.example/curlimages/curl:8.11.1",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			imgs := images(mustRender(t, nil, c.values))
			for where, want := range c.want {
				wantEqual(t, where+": image", imgs[where], want)
			}
		})
	}
}

// global.imagePullSecrets and imagePullSecrets, names or {name}, reach every
// pod, each name once.
func TestImagePullSecretsOnEveryPod(t *testing.T) {
	r := mustRender(t, []string{hatches}, everyObjectValues, map[string]any{"imagePullSecrets": []any{
		map[string]any{"name": "ghcr-pull"}, map[string]any{"name": "mirror-pull"},
	}})
	pods := 0
	for _, o := range r.Objects {
		spec := podSpec(o)
		if spec == nil {
			continue
		}
		pods++
		wantEqual(t, o.String()+": imagePullSecrets", fieldOf(list(spec, "imagePullSecrets"), "name"), []string{"mirror-pull", "ghcr-pull"})
	}
	if pods < 5 {
		t.Errorf("%d pods checked, want the API, Redis, the two Jobs and the test pod", pods)
	}
}

// Each hatch of the value set lands where it should, and extraEnv and
// extraArgs keep working beside them.
func TestEscapeHatchesLandWhereTheyShould(t *testing.T) {
	values := readYAML(t, chartDir+"/"+hatches)
	r := mustRender(t, []string{hatches}, map[string]any{
		"extraEnv":  []any{map[string]any{"name": "EXTRA_ONE", "value": "1"}},
		"extraArgs": []any{"--log-level=debug"},
	})
	api := r.get(t, "Deployment", "plantstore")
	spec := podSpec(api)
	wantEqual(t, "initContainers", fieldOf(list(spec, "initContainers"), "name"), []string{"check-config", "log-shipper"})
	wantEqual(t, "containers (the service, then sidecars)", fieldOf(list(spec, "containers"), "name"), []string{"plantstore", "proxy"})
	main := list(spec, "containers")[0].(map[string]any)
	// The init container's image is a template of the value set: rendered.
	wantEqual(t, "templated init container image (the service's)", str(list(spec, "initContainers")[0].(map[string]any), "image"), str(main, "image"))
	if volumes := fieldOf(list(spec, "volumes"), "name"); !slices.Contains(volumes, "scratch") || !slices.Contains(volumes, "tokens") {
		t.Errorf("volumes %v, want the chart's and extraVolumes' scratch", volumes)
	}
	if mounts := fieldOf(list(main, "volumeMounts"), "mountPath"); !slices.Contains(mounts, "/var/scratch") || !slices.Contains(mounts, "/etc/plantstore/tokens") {
		t.Errorf("the service's mounts %v, want the chart's and extraVolumeMounts' /var/scratch", mounts)
	}
	wantEqual(t, "envFrom", list(main, "envFrom"), []any{
		map[string]any{"configMapRef": map[string]any{"name": "plantstore-extra-env"}},
		map[string]any{"secretRef": map[string]any{"name": "plantstore-extra-secret-env"}, "prefix": "EXTRA_"},
	})
	env := list(main, "env")
	wantEqual(t, "extraEnv last in env", str(env[len(env)-1].(map[string]any), "name"), "EXTRA_ONE")
	wantEqual(t, "extraArgs: args", list(main, "args"), []any{"--log-level=debug"})
	wantEqual(t, "strategy (updateStrategy)", dig(api.Obj, "spec", "strategy"), values["updateStrategy"])
	wantSpread := deepCopy(t, map[string]any{"l": values["topologySpreadConstraints"]})["l"].([]any)
	dig(wantSpread[0].(map[string]any), "labelSelector", "matchLabels").(map[string]any)["app.kubernetes.io/instance"] = releaseName
	wantEqual(t, "topologySpreadConstraints (the value's alone)", list(spec, "topologySpreadConstraints"), wantSpread)

	job := r.get(t, "Job", "plantstore-migrate")
	jobSpec := podSpec(job)
	mig := values["migration"].(map[string]any)
	for k, v := range mig["podAnnotations"].(map[string]any) {
		wantEqual(t, "migration pod annotation "+k, dig(job.Obj, "spec", "template", "metadata", "annotations", k), v)
	}
	for k, v := range mig["podLabels"].(map[string]any) {
		wantEqual(t, "migration pod label "+k, dig(job.Obj, "spec", "template", "metadata", "labels", k), v)
	}
	for _, k := range []string{"nodeSelector", "tolerations", "affinity"} {
		wantEqual(t, "migration pod "+k+" (migration."+k+")", jobSpec[k], mig[k])
	}
	// The Job's selector-like labels stay the chart's: its NetworkPolicy still selects it.
	wantEqual(t, "migration pod component", str(job.Obj, "spec", "template", "metadata", "labels", "app.kubernetes.io/component"), "migrate")
}

// Without migration.nodeSelector and migration.tolerations the Job's pod
// takes the API pods' (as before), never their affinity.
func TestMigrationJobFallsBackToTheAPIPodsPlacement(t *testing.T) {
	nodeSelector := map[string]any{"pool": "plants"}
	tolerations := []any{map[string]any{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}}
	r := mustRender(t, nil, map[string]any{
		"nodeSelector": nodeSelector, "tolerations": tolerations,
		"affinity": map[string]any{"podAntiAffinity": map[string]any{}},
	})
	spec := podSpec(r.get(t, "Job", "plantstore-migrate"))
	if !reflect.DeepEqual(spec["nodeSelector"], nodeSelector) || !reflect.DeepEqual(spec["tolerations"], tolerations) {
		t.Errorf("migration pod nodeSelector %v tolerations %v, want the API pods'", spec["nodeSelector"], spec["tolerations"])
	}
	if spec["affinity"] != nil {
		t.Errorf("migration pod affinity %v, want none", spec["affinity"])
	}
}

// The Deployment's strategy and topology spread render as before by default;
// Recreate drops the default's rollingUpdate (the API server refuses both).
func TestDefaultStrategyAndSpreadUnchanged(t *testing.T) {
	api := mustRender(t, nil).get(t, "Deployment", "plantstore")
	wantEqual(t, "default strategy", dig(api.Obj, "spec", "strategy"), fromYAML(t, "type: RollingUpdate\nrollingUpdate: {maxUnavailable: 0, maxSurge: 1}\n"))
	spread := list(podSpec(api), "topologySpreadConstraints")
	wantEqual(t, "default spread", fieldOf(spread, "topologyKey"), []string{"topology.kubernetes.io/zone", "kubernetes.io/hostname"})
	wantEqual(t, "derived constraints' whenUnsatisfiable", fieldOf(spread, "whenUnsatisfiable"), []string{"ScheduleAnyway", "ScheduleAnyway"})

	api = mustRender(t, nil, map[string]any{"updateStrategy": map[string]any{"type": "Recreate"}}).get(t, "Deployment", "plantstore")
	wantEqual(t, "Recreate strategy", dig(api.Obj, "spec", "strategy"), map[string]any{"type": "Recreate"})
	api = mustRender(t, nil, map[string]any{"topologySpread": map[string]any{"enabled": false}}).get(t, "Deployment", "plantstore")
	if got := podSpec(api)["topologySpreadConstraints"]; got != nil {
		t.Errorf("topologySpread.enabled=false: constraints %v", got)
	}
}
