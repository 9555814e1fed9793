package monitoring

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// promtool runs the promtool of this module (a tool in tools/go.mod, so the
// version is the one go.mod pins) in the tools module.
func promtool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "promtool"}, args...)...)
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
