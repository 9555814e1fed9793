package docgen_test

import (
	"bufio"
	"flag"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated parts of the docs")

// TestMakeTargetsDoc: docs/development.md lists every documented make
// target, with the help text `make help` prints.
func TestMakeTargetsDoc(t *testing.T) {
	root := docgen.Root(t)
	f, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	target := regexp.MustCompile(`^([a-zA-Z0-9_-]+):[^=]*?## (.*)$`)
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := target.FindStringSubmatch(sc.Text()); m != nil {
			rows = append(rows, []string{docgen.Code("make " + m[1]), docgen.Cell(m[2])})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 10 {
		t.Fatalf("only %d documented targets in the Makefile", len(rows))
	}
	docgen.Check(t, "docs/development.md", "make-targets", docgen.Table([]string{"command", "what it does"}, rows), *update)
}

// TestLayoutDoc: docs/development.md's layout table is the module's
// packages, each described by the first sentence of its package comment
// (for a package of tests only, the one in its test files).
func TestLayoutDoc(t *testing.T) {
	root := docgen.Root(t)
	var rows [][]string
	for _, top := range []string{"cmd", "internal", "api"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			synopsis, ok, err := packageSynopsis(path)
			if err != nil || !ok {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if synopsis == "" {
				t.Errorf("%s: the package has no package comment", rel)
			}
			rows = append(rows, []string{docgen.Code(filepath.ToSlash(rel)), docgen.Cell(synopsis)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	docgen.Check(t, "docs/development.md", "layout", docgen.Table([]string{"package", "responsibility"}, rows), *update)
}

// packageSynopsis reads the package comment of the Go files in dir.
func packageSynopsis(dir string) (synopsis string, isPackage bool, err error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", false, err
	}
	var text, testText string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		isPackage = true
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return "", true, err
		}
		if f.Doc == nil {
			continue
		}
		if strings.HasSuffix(e.Name(), "_test.go") {
			testText = f.Doc.Text()
		} else {
			text = f.Doc.Text()
		}
	}
	if text == "" {
		text = testText
	}
	return new(doc.Package).Synopsis(text), isPackage, nil
}

// TestToolsDoc: the tools table of docs/development.md names every
// directory of tools/, and only those.
func TestToolsDoc(t *testing.T) {
	root := docgen.Root(t)
	b, err := os.ReadFile(filepath.Join(root, "docs/development.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(tools/[^`]+)`").FindAllStringSubmatch(string(b), -1) {
		listed[strings.TrimSuffix(m[1], "/")] = true
	}
	entries, err := os.ReadDir(filepath.Join(root, "tools"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !listed["tools/"+e.Name()] {
			t.Errorf("docs/development.md: tools/%s is not in the tools table", e.Name())
		}
		delete(listed, "tools/"+e.Name())
	}
	for p := range listed {
		t.Errorf("docs/development.md: %s is in the tools table but not in the repository", p)
	}
}

// TestLinks: every link of the Markdown docs stays inside the repository
// and leads somewhere: a file that exists, and a heading it has.
func TestLinks(t *testing.T) {
	root := docgen.Root(t)
	files := []string{"README.md", "CHANGELOG.md", "charts/plantstore/README.md"}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, file := range files {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(stripCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				t.Errorf("%s: link %s leaves the repository; describe it here or name it in plain text", file, target)
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
			}
			if strings.HasPrefix(dest, "..") {
				t.Errorf("%s: link %s leaves the repository; describe it here", file, target)
				continue
			}
			info, err := os.Stat(filepath.Join(root, dest))
			if err != nil {
				t.Errorf("%s: link %s: %v", file, target, err)
				continue
			}
			if info.IsDir() {
				continue
			}
			body, err := os.ReadFile(filepath.Join(root, dest))
			if err != nil {
				t.Fatal(err)
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !anchors(string(body))[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", file, target, dest, anchor)
			}
		}
	}
}

var fence = regexp.MustCompile("(?s)```.*?```")

// stripCode drops fenced code blocks, whose brackets are not links.
func stripCode(s string) string { return fence.ReplaceAllString(s, "") }

// anchors are the ids GitHub gives a document's headings.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(stripCode(md), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ' || r == '-':
				b.WriteRune('-')
			case r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 127:
				b.WriteRune(r)
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			out[id+"-"+strconv.Itoa(n)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	}
	return out
}

// TestDocsStateFacts: the docs read as what holds today, not as a log of
// runs: no prose line over 300 characters (tables and code blocks aside),
// and docs/validation.md, which states the latest figures once each,
// within 20 KB.
func TestDocsStateFacts(t *testing.T) {
	root := docgen.Root(t)
	const maxLine, maxValidation = 300, 20000
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "charts", "plantstore", "README.md")) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		inCode := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
				continue
			}
			if !inCode && !strings.HasPrefix(line, "|") && len([]rune(line)) > maxLine {
				t.Errorf("%s:%d: a prose line of %d characters (at most %d): %.80s…", rel, i+1, len([]rune(line)), maxLine, line)
			}
		}
		if rel == filepath.Join("docs", "validation.md") && len(b) > maxValidation {
			t.Errorf("%s: %d bytes, at most %d: state each figure once, the history belongs in git", rel, len(b), maxValidation)
		}
	}
}
