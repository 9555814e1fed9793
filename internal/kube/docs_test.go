package kube

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated parts of the docs")

// TestCommandDoc: docs/configuration.md's tables of `plantstore
// ensure-secrets` and `plantstore roll-redis` are the commands' own flag
// sets.
func TestCommandDoc(t *testing.T) {
	var s string
	var d time.Duration
	for name, fs := range map[string]*flag.FlagSet{
		"ensure-secrets-flags": newFlagSet(io.Discard, &Spec{}, &ClientConfig{}, pairs{}, pairs{}),
		"roll-redis-flags":     newRollFlagSet(io.Discard, &RollSpec{}, &ClientConfig{}, &s, &s, &d),
	} {
		var rows [][]string
		fs.VisitAll(func(f *flag.Flag) {
			rows = append(rows, []string{docgen.Code("--" + f.Name), docgen.Code(f.DefValue), docgen.Cell(f.Usage)})
		})
		if len(rows) < 8 {
			t.Fatalf("%s: %d flags", name, len(rows))
		}
		docgen.Check(t, "docs/configuration.md", name, docgen.Table([]string{"flag", "default", "meaning"}, rows), *update)
	}
}
