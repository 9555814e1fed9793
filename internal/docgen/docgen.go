// Package docgen keeps the generated parts of the project's Markdown docs in
// step with the code. A generated part sits between two markers,
//
//	<!-- generated:NAME (go test ./path -run Test -update) -->
//	...
//	<!-- /generated:NAME -->
//
// and a test of the package that owns the fact renders it and calls Check:
// a stale part fails the test with the difference, and -update rewrites it.
package docgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Check compares the part NAME of the Markdown file at path (relative to
// the repository root) with want; with update it writes want there instead.
func Check(t testing.TB, path, name, want string, update bool) {
	t.Helper()
	file := filepath.Join(Root(t), path)
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got, next, err := Replace(doc, name, want)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got == strings.TrimSpace(want) {
		return
	}
	if update {
		if err := os.WriteFile(file, next, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: rewrote the generated part %q", path, name)
		return
	}
	t.Errorf("%s: the generated part %q is stale; run `make generate` (or this test with -update).\n%s",
		path, name, Diff(got, strings.TrimSpace(want)))
}

// Replace finds the part NAME in doc and returns what it holds now and the
// document with want in its place.
func Replace(doc []byte, name, want string) (current string, updated []byte, err error) {
	open := []byte("<!-- generated:" + name)
	closing := []byte("<!-- /generated:" + name + " -->")
	i := bytes.Index(doc, open)
	if i < 0 {
		return "", nil, fmt.Errorf("no %s marker", open)
	}
	eol := bytes.IndexByte(doc[i:], '\n')
	if eol < 0 {
		return "", nil, fmt.Errorf("the %s marker ends the file", open)
	}
	start := i + eol + 1
	end := bytes.Index(doc[start:], closing)
	if end < 0 {
		return "", nil, fmt.Errorf("no %s marker after %s", closing, open)
	}
	end += start
	var b bytes.Buffer
	b.Write(doc[:start])
	b.WriteString(strings.TrimSpace(want))
	b.WriteString("\n")
	b.Write(doc[end:])
	return strings.TrimSpace(string(doc[start:end])), b.Bytes(), nil
}

// Diff lists the lines of want that got lacks (+) and those of got that
// want lacks (-): enough to see what drifted in a table.
func Diff(got, want string) string {
	have := map[string]int{}
	for _, l := range strings.Split(got, "\n") {
		have[l]++
	}
	need := map[string]int{}
	for _, l := range strings.Split(want, "\n") {
		need[l]++
	}
	var b strings.Builder
	for _, l := range strings.Split(got, "\n") {
		if need[l] == 0 {
			fmt.Fprintf(&b, "- %s\n", l)
		} else {
			need[l]--
		}
	}
	for _, l := range strings.Split(want, "\n") {
		if have[l] == 0 {
			fmt.Fprintf(&b, "+ %s\n", l)
		} else {
			have[l]--
		}
	}
	if b.Len() == 0 {
		return "(the same lines in another order)"
	}
	return b.String()
}

// Root is the repository's root: the directory of the main go.mod above
// this source file.
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("docgen: no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Table renders a Markdown table; cells are written as given.
func Table(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// Code quotes s as inline code, or writes "" for an empty value.
func Code(s string) string {
	if s == "" {
		s = `""`
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

// Cell escapes the pipes of a table cell.
func Cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
