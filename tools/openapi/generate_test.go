package openapi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenerateCheck runs tools/openapi/generate-check.sh (make
// generate-check, in make lint) on the repository's files, which must
// agree, and on copies where the generated client or the document was
// changed, which it must refuse with a diff.
func TestGenerateCheck(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(root, "api", "openapi.yaml")
	gen := filepath.Join(root, "api", "client", "client.gen.go")
	edited := func(path, old, new string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s no longer contains %q: update the case", path, old)
		}
		out := filepath.Join(t.TempDir(), filepath.Base(path))
		if err := os.WriteFile(out, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		name     string
		doc, gen func() string
		fails    bool
		diff     string // a line of the diff it must print
	}{
		{name: "the repository's files agree", doc: func() string { return doc }, gen: func() string { return gen }},
		{name: "a hand edit of the generated file", doc: func() string { return doc },
			gen:   func() string { return edited(gen, "\tName string `json:\"name\"`\n", "\tName string `json:\"nom\"`\n") },
			fails: true, diff: "-\tName string `json:\"nom\"`"},
		{name: "a document changed without regenerating", gen: func() string { return gen },
			doc:   func() string { return edited(doc, "operationId: getPlant\n", "operationId: readPlant\n") },
			fails: true, diff: "+func (c *Client) ReadPlant("},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(root, "tools", "openapi", "generate-check.sh"), tc.doc(), tc.gen())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if _, exited := err.(*exec.ExitError); err != nil && !exited {
				t.Fatal(err)
			}
			if failed := err != nil; failed != tc.fails {
				t.Fatalf("failed: %v, want %v\nstdout:\n%s\nstderr:\n%s", failed, tc.fails, stdout.String(), stderr.String())
			}
			if !tc.fails {
				return
			}
			if !strings.Contains(stdout.String(), tc.diff) {
				t.Errorf("the diff does not show %q:\n%s", tc.diff, stdout.String())
			}
			if !strings.Contains(stderr.String(), "run make generate") {
				t.Errorf("the failure does not say how to fix it:\n%s", stderr.String())
			}
		})
	}
}
