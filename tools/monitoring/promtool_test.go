package monitoring

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/internal/docgen"
)

// promtoolPath builds promtool once for the parallel tests, which would
// otherwise each build it, and returns its path. tools/k8s/build.sh builds
// it from the module of the test cluster's Prometheus (the version the alerts
// run under there) with that Prometheus's flags, into the cache the
// cluster's tools share: the two share every compiled package, so a cold
// machine compiles Prometheus's dependencies once, not twice.
var promtoolPath = sync.OnceValues(func() (string, error) {
	cmd := exec.Command(filepath.Join("..", "k8s", "build.sh"), "promtool")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("tools/k8s/build.sh promtool: %w\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return filepath.Join(lines[len(lines)-1], "promtool"), nil
})

// promtool runs that promtool.
func promtool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := promtoolPath()
	if err != nil {
		t.Fatalf("building promtool: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Join(docgen.Root(t), "tools")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	out, err := promtool(t, "check", "rules", "--lint=all", "--lint-fatal", chartFile(t, rulesFile))
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(out))
}

func TestPromtoolTestRules(t *testing.T) {
	t.Parallel()
	out, err := promtool(t, "test", "rules", chartFile(t, rulesTestFile))
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(out))
}
