package longtest

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The cases run this test binary again (-test.run picks one helper below)
// with -test.short on or off and CI set or not, and read how it ended.
const envHelper = "LONGTEST_HELPER"

func TestMarkedHelper(t *testing.T) {
	if os.Getenv(envHelper) != "mark" {
		t.Skip("run by TestMarkOutcome in a child process")
	}
	Mark(t, "a test of longtest")
	t.Log("LONG BODY RAN")
}

func TestMarkOutcome(t *testing.T) {
	for _, tc := range []struct {
		name     string
		short    bool
		ci       string
		wantFail bool
		wantOut  string
	}{
		{"full run", false, "", false, "LONG BODY RAN"},
		{"full run in CI", false, "true", false, "LONG BODY RAN"},
		{"short run skips", true, "", false, "--- SKIP: TestMarkedHelper"},
		{"short run in CI fails", true, "true", true, "--- FAIL: TestMarkedHelper"},
		{"CI other than true is not CI", true, "1", false, "--- SKIP: TestMarkedHelper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, failed := runSelf(t, "mark", "^TestMarkedHelper$", tc.short, tc.ci)
			if failed != tc.wantFail || !strings.Contains(out, tc.wantOut) {
				t.Fatalf("failed=%v, want %v; output lacks %q:\n%s", failed, tc.wantFail, tc.wantOut, out)
			}
			if tc.short && strings.Contains(out, "LONG BODY RAN") {
				t.Fatalf("the long body ran under -short:\n%s", out)
			}
		})
	}
}

func TestPackageOutcome(t *testing.T) {
	for _, tc := range []struct {
		name     string
		short    bool
		ci       string
		wantFail bool
		wantOut  string
	}{
		{"full run goes on", false, "true", false, "PACKAGE WENT ON"},
		{"short run exits 0 before the tests", true, "", false, "skipped under -short"},
		{"short run in CI exits 1", true, "true", true, "CI runs make test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, failed := runSelf(t, "package", "^$", tc.short, tc.ci)
			if failed != tc.wantFail || !strings.Contains(out, tc.wantOut) {
				t.Fatalf("failed=%v, want %v; output lacks %q:\n%s", failed, tc.wantFail, tc.wantOut, out)
			}
		})
	}
}

// TestMain plays a long package's TestMain when the helper variable asks.
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(envHelper) == "package" {
		Package("a test of longtest")
		os.Stdout.WriteString("PACKAGE WENT ON\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runSelf(t *testing.T, helper, run string, short bool, ci string) (string, bool) {
	t.Helper()
	args := []string{"-test.run=" + run, "-test.v"}
	if short {
		args = append(args, "-test.short")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envHelper+"="+helper, "CI="+ci)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running %s: %v", os.Args[0], err)
	}
	return out.String(), err != nil
}
