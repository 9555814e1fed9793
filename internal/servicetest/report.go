package servicetest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Full reports whether the chaos scenarios run at full length and weight
// (PLANTSTORE_CHAOS=full, set by make chaos). By default (make test, CI) they
// run a bounded variant that asserts the same properties.
func Full() bool { return os.Getenv("PLANTSTORE_CHAOS") == "full" }

// Pick returns full under Full and bounded otherwise.
func Pick[T any](bounded, full T) T {
	if Full() {
		return full
	}
	return bounded
}

// scenarioWidth pads scenario names so that the CHAOS lines align.
const scenarioWidth = 14

// Report prints one line of a scenario's figures to stdout:
// "CHAOS <scenario padded>  <figures>". make chaos collects these lines
// (grep '^CHAOS '), so every scenario calls it exactly once. It goes to
// stdout directly rather than t.Log, whose indentation would hide it.
func Report(t testing.TB, scenario string, format string, args ...any) {
	t.Helper()
	figures := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	fmt.Printf("CHAOS %-*s  %s\n", scenarioWidth, scenario, figures)
}
