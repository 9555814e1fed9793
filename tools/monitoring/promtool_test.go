package monitoring

import (
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// promtoolPath builds the promtool of this module (a tool in tools/go.mod,
// so the version is the one go.mod pins) once for the parallel tests, which
// would otherwise each build it, and returns the binary in the build cache.
var promtoolPath = sync.OnceValues(func() (string, error) {
	cmd := exec.Command("go", "tool", "-n", "promtool")
	cmd.Dir = ".."
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
})

// promtool runs that promtool.
func promtool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := promtoolPath()
	if err != nil {
		t.Fatalf("building promtool: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Join(repoRoot(t), "tools")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	out, err := promtool(t, "check", "rules", "--lint=all", "--lint-fatal", rulesPath(t))
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(out))
}

func TestPromtoolTestRules(t *testing.T) {
	t.Parallel()
	out, err := promtool(t, "test", "rules", rulesTestPath(t))
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(out))
}
