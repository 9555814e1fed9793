package main

import (
	"encoding/json"
	"testing"
)

func TestProvenance(t *testing.T) {
	p, err := newProvenance("git+https://example.test/repo", "abc123", "1.2.3", "builder", "run-1", 1700000000, 1700000060,
		[]string{"linux/amd64"}, map[string]string{"goToolchain": "go1.26.11"},
		[]string{"sha256:00ff pkg:deb/debian/tzdata@2026a?arch=all&distro=debian-12"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	deps := got["buildDefinition"].(map[string]any)["resolvedDependencies"].([]any)
	if len(deps) != 2 || deps[1].(map[string]any)["uri"] != "pkg:deb/debian/tzdata@2026a?arch=all&distro=debian-12" {
		t.Errorf("resolvedDependencies %v", deps)
	}
	if got["runDetails"].(map[string]any)["metadata"].(map[string]any)["startedOn"] != "2023-11-14T22:13:20Z" {
		t.Errorf("runDetails %v", got["runDetails"])
	}
	for _, bad := range []string{"00ff pkg:x", "sha256: pkg:x", "sha256:00ff", ""} {
		if _, err := newProvenance("s", "r", "v", "b", "", 0, 0, nil, nil, []string{bad}); err == nil {
			t.Errorf("dependency %q accepted", bad)
		}
	}
}
