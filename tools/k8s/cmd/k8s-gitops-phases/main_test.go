package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const rendered = `
apiVersion: v1
kind: ServiceAccount
metadata:
  name: ps-secrets
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-20"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
---
apiVersion: batch/v1
kind: Job
metadata:
  name: ps-secrets
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-10"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ps
---
apiVersion: v1
kind: Service
metadata:
  name: ps
---
apiVersion: batch/v1
kind: Job
metadata:
  name: ps-migrate
  annotations:
    helm.sh/hook: post-install,post-upgrade
---
apiVersion: v1
kind: Pod
metadata:
  name: ps-test
  annotations:
    helm.sh/hook: test
`

func TestPhases(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"-out", dir}, strings.NewReader(rendered), &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Split(line, "\t")
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range strings.Split(string(b), "\n") {
			if n, ok := strings.CutPrefix(l, "  name: "); ok {
				names = append(names, n)
			}
		}
		got = append(got, strings.Join(f[1:], " ")+": "+strings.Join(names, ","))
	}
	want := []string{
		"PreSync -20 BeforeHookCreation,HookSucceeded: ps-secrets",
		"PreSync -10 BeforeHookCreation,HookSucceeded: ps-secrets",
		"Sync 0 -: ps,ps",
		"PostSync 0 BeforeHookCreation: ps-migrate",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 4 {
		t.Errorf("%d files, want 4", len(files))
	}
}

func TestPhasesRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"bad weight": "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-weight: x\n",
		"bad policy": "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-delete-policy: sometimes\n",
		"two phases": "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n",
		"not yaml":   "kind: [\n",
	} {
		if err := run([]string{"-out", t.TempDir()}, strings.NewReader(in), &bytes.Buffer{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := run(nil, strings.NewReader(""), &bytes.Buffer{}); err == nil {
		t.Errorf("no -out: no error")
	}
}
