package kubesecret

import (
	"flag"
	"io"
	"testing"

	"github.com/plantstore/plantstore/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated parts of the docs")

// TestCommandDoc: docs/configuration.md's table of `plantstore
// ensure-secrets` is the command's own flag set.
func TestCommandDoc(t *testing.T) {
	fs := newFlagSet(io.Discard, &Spec{}, &ClientConfig{}, pairs{}, pairs{})
	var rows [][]string
	fs.VisitAll(func(f *flag.Flag) {
		rows = append(rows, []string{docgen.Code("--" + f.Name), docgen.Code(f.DefValue), docgen.Cell(f.Usage)})
	})
	if len(rows) < 10 {
		t.Fatalf("%d flags", len(rows))
	}
	docgen.Check(t, "docs/configuration.md", "ensure-secrets-flags", docgen.Table([]string{"flag", "default", "meaning"}, rows), *update)
}
