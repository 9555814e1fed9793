package docspage_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/plantstore/plantstore/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated parts of the docs")

// TestReferencePageDoc: docs/api.md names the renderer the page embeds as
// assets/manifest.json records it, the one place its version is written.
func TestReferencePageDoc(t *testing.T) {
	m := readManifest(t)
	rows := [][]string{
		{"renderer", docgen.Code(m.Package) + " " + m.Version + " (" + m.License + ")"},
		{"npm integrity of its tarball", docgen.Code(m.Integrity)},
	}
	for _, f := range m.Files {
		gz, err := os.Stat(filepath.Join("assets", f.Name+".gz"))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, []string{
			"served as " + docgen.Code("/docs/"+f.Name),
			fmt.Sprintf("the package's %s: %d bytes, SHA-256 %s; embedded gzip-compressed, %d bytes", docgen.Code(f.From), f.Size, docgen.Code(f.SHA256), gz.Size()),
		})
	}
	docgen.Check(t, "docs/api.md", "reference-page", docgen.Table([]string{"what", "pinned"}, rows), *update)
}
