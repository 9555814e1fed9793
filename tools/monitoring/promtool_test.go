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

// k8sTool returns the path of one of the test cluster's tools, built by
// tools/k8s/build.sh (or found built) into the cache the cluster's tools
// share: the binary the cluster runs, with its flags and version stamp, so
// that a cold machine compiles its packages once for make test and the
// cluster, not twice.
func k8sTool(name string) (string, error) {
	cmd := exec.Command(filepath.Join("..", "k8s", "build.sh"), name)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("tools/k8s/build.sh %s: %w\n%s", name, err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return filepath.Join(lines[len(lines)-1], name), nil
}

// promtoolPath builds promtool once for the parallel tests, from the module
// of the test cluster's Prometheus (the version the alerts run under there).
var promtoolPath = sync.OnceValues(func() (string, error) { return k8sTool("promtool") })

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
