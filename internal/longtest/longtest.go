// Package longtest marks the tests make test-short leaves out (several
// processes or Redis servers, chaos and HA scenarios) and makes sure CI
// cannot pass by leaving them out: under go test -short they skip, unless
// CI=true, where they fail.
package longtest

import (
	"fmt"
	"os"
	"testing"
)

// inCI reports whether the tests run in CI: GitHub Actions and .ci/run's
// caller both set CI=true.
func inCI() bool { return os.Getenv("CI") == "true" }

// Mark skips t under go test -short, saying why it is long; in CI it fails
// instead, since make test (what CI calls) promises the whole suite.
func Mark(t testing.TB, why string) {
	t.Helper()
	if !testing.Short() {
		return
	}
	if inCI() {
		t.Fatalf("long test (%s) under -short with CI=true: CI runs make test, the whole suite, without -short", why)
	}
	t.Skipf("long: %s; make test runs it", why)
}

// Package ends the TestMain of a package of long scenarios before it builds
// or runs anything under go test -short: it exits 0 (skipped), or 1 in CI.
// Call it after flag.Parse.
func Package(why string) {
	if !testing.Short() {
		return
	}
	if inCI() {
		fmt.Fprintf(os.Stderr, "long tests (%s) under -short with CI=true: CI runs make test, the whole suite, without -short\n", why)
		os.Exit(1)
	}
	fmt.Printf("skipped under -short: %s; make test runs them\n", why)
	os.Exit(0)
}
