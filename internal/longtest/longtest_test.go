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

// TestOutcome runs this test binary again (-test.run and envHelper pick a
// helper) with -test.short on or off and CI set or not, and reads how it
// ended.
const envHelper = "LONGTEST_HELPER"

// TestMarkedHelper is a marked test: TestOutcome runs it in a child process
// in every mode; in this process it runs as any long test does.
func TestMarkedHelper(t *testing.T) {
	Mark(t, "a test of longtest")
	t.Log("LONG BODY RAN")
}

// TestOutcome runs a marked test (helper "mark") and a long package's
// TestMain (helper "package") in every mode.
func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name, helper, run string
		short             bool
		ci                string
		wantFail          bool
		wantOut           string
	}{
		{"test: full run", "mark", "^TestMarkedHelper$", false, "", false, "LONG BODY RAN"},
		{"test: full run in CI", "mark", "^TestMarkedHelper$", false, "true", false, "LONG BODY RAN"},
		{"test: short run skips", "mark", "^TestMarkedHelper$", true, "", false, "--- SKIP: TestMarkedHelper"},
		{"test: short run in CI fails", "mark", "^TestMarkedHelper$", true, "true", true, "--- FAIL: TestMarkedHelper"},
		{"test: CI other than true is not CI", "mark", "^TestMarkedHelper$", true, "1", false, "--- SKIP: TestMarkedHelper"},
		{"package: full run goes on", "package", "^$", false, "true", false, "PACKAGE WENT ON"},
		{"package: short run exits 0 before the tests", "package", "^$", true, "", false, "skipped under -short"},
		{"package: short run in CI exits 1", "package", "^$", true, "true", true, "CI runs make test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, failed := runSelf(t, tc.helper, tc.run, tc.short, tc.ci)
			if failed != tc.wantFail || !strings.Contains(out, tc.wantOut) {
				t.Fatalf("failed=%v, want %v; output lacks %q:\n%s", failed, tc.wantFail, tc.wantOut, out)
			}
			if tc.short && (strings.Contains(out, "LONG BODY RAN") || strings.Contains(out, "PACKAGE WENT ON")) {
				t.Fatalf("the long part ran under -short:\n%s", out)
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
