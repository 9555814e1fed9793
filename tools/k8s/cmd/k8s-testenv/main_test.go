package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
kind: Job
metadata:
  name: migrate
  annotations: {helm.sh/hook: "pre-install,pre-upgrade"}
spec: {template: {spec: {containers: [{name: c, image: c}]}}}
`

func TestPods(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"pods", dir}, strings.NewReader(manifests), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("lines: %q", lines)
	}
	if !strings.HasSuffix(lines[0], "\tStatefulSet/redis\tredis") || !strings.HasSuffix(lines[1], "\tPod/t\tdefault") {
		t.Errorf("lines: %q", lines)
	}
	b, err := os.ReadFile(filepath.Join(dir, "statefulset-redis.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod obj
	if err := yaml.Unmarshal(b, &pod); err != nil {
		t.Fatal(err)
	}
	vols := get(pod, "spec", "volumes").([]any)
	if len(vols) != 2 || str(vols[1], "persistentVolumeClaim", "claimName") != "data-redis-0" {
		t.Errorf("volumes: %v", vols)
	}
	if str(pod, "metadata", "labels", "app") != "redis" || get(pod, "metadata", "namespace") != nil {
		t.Errorf("metadata: %v", pod["metadata"])
	}
}

func TestNamespacesAndHooks(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"namespaces"}, strings.NewReader(manifests), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "ns1\n" {
		t.Errorf("namespaces: %q", out.String())
	}
	out.Reset()
	if err := run([]string{"hooks"}, strings.NewReader(manifests), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "Job/migrate\tpre-install,pre-upgrade\n" {
		t.Errorf("hooks: %q", out.String())
	}
}

func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	def := filepath.Join(dir, "values.yaml")
	set := filepath.Join(dir, "set.yaml")
	os.WriteFile(def, []byte(`
tokens: {existingSecret: "", existingSecretKey: tokens}
externalRedis:
  existingSecret: ""
  existingSecretPasswordKey: redis-password
  tls: {caSecret: {existingSecret: "", key: ca.crt}}
`), 0o644)
	os.WriteFile(set, []byte(`
tokens: {existingSecret: my-tokens}
externalRedis:
  existingSecret: redis-auth
  tls: {caSecret: {existingSecret: {name: redis-ca, key: ca.pem}}}
`), 0o644)
	var out bytes.Buffer
	if err := run([]string{"secrets", def, set}, nil, &out); err != nil {
		t.Fatal(err)
	}
	want := "my-tokens\ttokens\nredis-auth\tredis-password\nredis-ca\tca.pem\n"
	if out.String() != want {
		t.Errorf("secrets:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestPorts(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"ports", "3"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(out.String())); n != 3 {
		t.Errorf("ports: %q", out.String())
	}
}
