package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHooks(t *testing.T) {
	in := `---
kind: Pod
metadata: {name: t, annotations: {helm.sh/hook: test}}
---
kind: Pod
metadata: {name: old, annotations: {helm.sh/hook: " test-success "}}
---
kind: Job
metadata: {name: migrate, annotations: {helm.sh/hook: "pre-install,pre-upgrade"}}
---
kind: Secret
metadata: {name: both, annotations: {helm.sh/hook: "test, post-install"}}
---
kind: Service
metadata: {name: plain}
`
	var out bytes.Buffer
	if err := run(nil, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if want := "Job/migrate\tpre-install,pre-upgrade\nSecret/both\ttest, post-install\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

func TestHooksErrors(t *testing.T) {
	if err := run(nil, strings.NewReader("kind: [\n"), &bytes.Buffer{}); err == nil {
		t.Error("invalid YAML: no error")
	}
	if err := run([]string{"x"}, strings.NewReader(""), &bytes.Buffer{}); err == nil {
		t.Error("an argument: no error")
	}
}
