package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/tools/k8s/cmd/internal/manifest"
	"sigs.k8s.io/yaml"
)

const manifests = `---
# Source: x/templates/sts.yaml
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: redis, namespace: ns1}
spec:
  template:
    metadata: {labels: {app: redis}}
    spec:
      serviceAccountName: redis
      containers: [{name: r, image: r, volumeMounts: [{name: data, mountPath: /data}]}]
      volumes: [{name: conf, configMap: {name: c}}]
  volumeClaimTemplates: [{metadata: {name: data}}]
---
apiVersion: v1
kind: Service
metadata: {name: svc}
--- 
apiVersion: v1
kind: Pod
metadata:
  name: t
  annotations: {helm.sh/hook: test}
spec: {containers: [{name: c, image: c}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: Nightly_Run}
spec: {jobTemplate: {spec: {template: {spec: {serviceAccountName: cron, containers: [{name: c, image: c}]}}}}}
`

func TestPodTemplates(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{dir}, strings.NewReader(manifests), &out); err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "statefulset-redis.yaml") + "\tStatefulSet/redis\tredis",
		filepath.Join(dir, "pod-t.yaml") + "\tPod/t\tdefault",
		filepath.Join(dir, "cronjob-nightly-run.yaml") + "\tCronJob/Nightly_Run\tcron",
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("printed:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
	b, err := os.ReadFile(filepath.Join(dir, "statefulset-redis.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod manifest.Object
	if err := yaml.Unmarshal(b, &pod); err != nil {
		t.Fatal(err)
	}
	vols, _ := manifest.Get(pod, "spec", "volumes").([]any)
	if len(vols) != 2 || manifest.String(vols[1], "persistentVolumeClaim", "claimName") != "data-redis-0" {
		t.Errorf("volumes: %v", vols)
	}
	if manifest.String(pod, "metadata", "labels", "app") != "redis" || manifest.Get(pod, "metadata", "namespace") != nil {
		t.Errorf("metadata: %v", pod["metadata"])
	}
	if k := manifest.String(pod, "kind"); k != "Pod" {
		t.Errorf("kind %q", k)
	}
}

func TestPodTemplatesErrors(t *testing.T) {
	for name, in := range map[string]string{
		"no pod template": "kind: Deployment\nmetadata: {name: d}\nspec: {}\n",
		"no pod spec":     "kind: Job\nmetadata: {name: j}\nspec: {template: {metadata: {}}}\n",
		"invalid YAML":    "kind: [\n",
	} {
		if err := run([]string{t.TempDir()}, strings.NewReader(in), &bytes.Buffer{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := run(nil, strings.NewReader(""), &bytes.Buffer{}); err == nil {
		t.Error("no DIR: no error")
	}
}
