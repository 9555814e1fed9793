package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository's root, from tools/version.
const repoRoot = "../.."

// copyRepo copies every file check reads into a temporary root.
func copyRepo(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	for _, f := range Files() {
		write(t, dst, f, read(t, repoRoot, f))
	}
	return dst
}

// edit replaces the one match of re in root's file with repl.
func edit(t *testing.T, root, file, re, repl string) {
	t.Helper()
	rx, s := regexp.MustCompile(re), read(t, root, file)
	if n := len(rx.FindAllStringIndex(s, -1)); n != 1 {
		t.Fatalf("%s: %q matches %d times, want once", file, re, n)
	}
	write(t, root, file, rx.ReplaceAllString(s, repl))
}

func read(t *testing.T, root, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, root, file, content string) {
	t.Helper()
	p := filepath.Join(root, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// current is the repository's VERSION; next is a version it will not be.
func current(t *testing.T) string {
	t.Helper()
	v, err := ReadVersion(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const next = "99.1.0"

func check(t *testing.T, root string) []Problem {
	t.Helper()
	probs, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	return probs
}

// The repository itself agrees with its VERSION.
func TestRepositoryAgrees(t *testing.T) {
	for _, p := range check(t, repoRoot) {
		t.Error(p)
	}
}

// Each deliberate mismatch is reported once, naming the file that has it.
func TestCheckReportsEachMismatch(t *testing.T) {
	for _, tc := range []struct {
		name, file, re, repl string
		msg                  string // a part of the problem's message
	}{
		{"chart version", "charts/plantstore/Chart.yaml", `(?m)^version: .*$`, "version: 1.0.9", `version is "1.0.9"`},
		{"chart appVersion", "charts/plantstore/Chart.yaml", `(?m)^appVersion: .*$`, `appVersion: "9.9.9"`, `appVersion is "9.9.9"`},
		{"chart appVersion gone", "charts/plantstore/Chart.yaml", `(?m)^appVersion: .*\n`, "", "appVersion: not found"},
		{"openapi info.version", "api/openapi.yaml", `(?m)^  version: .*$`, "  version: 1.0.0", `info.version is "1.0.0"`},
		{"openapi prose", "api/openapi.yaml", `This document \(version [^)]*\)`, "This document (version 1.0.0)", `this document's version) is "1.0.0"`},
		{"openapi operation description", "api/openapi.yaml", `Returns this OpenAPI document \(version [^)]*\)`, "Returns this OpenAPI document (version 0.0.1)", `description is "0.0.1"`},
		{"openapi example", "api/openapi.yaml", `(?m)^( {10,}title: Plant Store\n +)version: .*$`, "${1}version: 1.0.0", `example info.version is "1.0.0"`},
		{"kustomize newTag", "k8s/base/kustomization.yaml", `(?m)^    newTag: .*$`, `    newTag: "1.0.0"`, `newTag of ghcr.io/plantstore/plantstore is "1.0.0"`},
		{"kustomize images entry gone", "k8s/base/kustomization.yaml", `(?m)^images:\n(  .*\n|    .*\n)*`, "", "newTag of ghcr.io/plantstore/plantstore: not found"},
		{"deployment image tag", "k8s/base/deployment.yaml", `ghcr\.io/plantstore/plantstore:\S+`, "ghcr.io/plantstore/plantstore:1.0.0", `image tag is "1.0.0"`},
		{"deployment service.version", "k8s/base/deployment.yaml", `service\.version=[^,\s]+`, "service.version=1.0.0", `service.version is "1.0.0"`},
		{"changelog section missing", "CHANGELOG.md", `(?m)^## \[` + regexp.QuoteMeta(current(t)) + `\] - .*$`, "## [" + current(t) + "-rc.1] - 2026-11-26", "no section"},
		{"changelog section undated", "CHANGELOG.md", `(?m)^## \[` + regexp.QuoteMeta(current(t)) + `\] - .*$`, "## [" + current(t) + "]", "no section"},
		{"license text", "LICENSE", `(?s)^.*$`, "MIT License\n", "is not the Apache License 2.0 text"},
		{"license text modified", "LICENSE", `Version 2\.0, January 2004`, "Version 2.0, January 2005", "is not the Apache License 2.0 text"},
		{"chart license label", "charts/plantstore/Chart.yaml", `artifacthub\.io/license: \S+`, "artifacthub.io/license: MIT", `artifacthub.io/license is "MIT"`},
		{"chart license label gone", "charts/plantstore/Chart.yaml", `(?m)^  artifacthub\.io/license: .*\n`, "", "artifacthub.io/license: not found"},
		{"Dockerfile license label", "Dockerfile", `(?m)^ARG LICENSES=.*$`, "ARG LICENSES=NOASSERTION", `ARG LICENSES default is "NOASSERTION"`},
		{"build.sh license label", "tools/image/build.sh", `(?m)^LICENSES=.*$`, "LICENSES=${LICENSES:-NOASSERTION}", `LICENSES default is "NOASSERTION"`},
		{"package doc", "cmd/plantstore/main.go", `Apache-2\.0`, "Apache 2", "package doc does not say"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyRepo(t)
			edit(t, root, tc.file, tc.re, tc.repl)
			probs := check(t, root)
			if len(probs) != 1 {
				t.Fatalf("check found %d problems, want 1 in %s: %v", len(probs), tc.file, probs)
			}
			if probs[0].File != tc.file || !strings.Contains(probs[0].Msg, tc.msg) {
				t.Errorf("check reported %q, want a problem in %s containing %q", probs[0], tc.file, tc.msg)
			}
		})
	}
}

// A VERSION that nothing else states is reported in every place.
func TestCheckNewVersionEverywhere(t *testing.T) {
	root := copyRepo(t)
	write(t, root, VersionFile, next+"\n")
	probs := check(t, root)
	if want := len(places) + 1; len(probs) != want { // every place and the changelog
		t.Errorf("check found %d problems, want %d: %v", len(probs), want, probs)
	}
}

// The command exits 1 with one line per disagreement, naming the file.
func TestRunCheckFails(t *testing.T) {
	root := copyRepo(t)
	edit(t, root, "charts/plantstore/Chart.yaml", `(?m)^appVersion: .*$`, `appVersion: "9.9.9"`)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-root", root, "check"}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stderr: %s", code, &stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `charts/plantstore/Chart.yaml: appVersion is "9.9.9", expected "`+current(t)+`"`) {
		t.Errorf("stderr:\n%s", &stderr)
	}
}

// set writes the version everywhere, keeps everything else, and check then
// passes.
func TestSetThenCheck(t *testing.T) {
	root := copyRepo(t)
	before := map[string]string{}
	for _, f := range Files() {
		before[f] = read(t, root, f)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-root", root, "set", "-date", "2027-01-02", next}, &stdout, &stderr); code != 0 {
		t.Fatalf("set: exit %d: %s", code, &stderr)
	}
	for _, p := range check(t, root) {
		t.Error(p)
	}
	if got := read(t, root, VersionFile); got != next+"\n" {
		t.Errorf("VERSION = %q", got)
	}
	chart := read(t, root, "charts/plantstore/Chart.yaml")
	for _, want := range []string{"\nversion: " + next + "\n", "\nappVersion: \"" + next + "\"\n", "# The chart's version is the service's"} {
		if !strings.Contains(chart, want) {
			t.Errorf("Chart.yaml lacks %q:\n%s", want, chart)
		}
	}
	if k := read(t, root, "k8s/base/kustomization.yaml"); !strings.Contains(k, "newTag: \""+next+"\"\n") {
		t.Errorf("kustomization.yaml:\n%s", k)
	}
	// The prose about earlier versions stays: it is history, not this
	// document's version.
	api := read(t, root, "api/openapi.yaml")
	if !strings.Contains(api, "This document (version "+next+")") {
		t.Error("api/openapi.yaml does not say it is version " + next)
	}
	for _, old := range []string{"1.0.0", "1.1.0"} {
		if old != current(t) && strings.Count(api, old) != strings.Count(before["api/openapi.yaml"], old) {
			t.Errorf("api/openapi.yaml: mentions of %s changed from %d to %d", old, strings.Count(before["api/openapi.yaml"], old), strings.Count(api, old))
		}
	}
	// Only the version's own lines changed: the same number of lines, and
	// each changed line states the new version.
	for _, f := range Files() {
		if f == ChangelogFile || f == VersionFile {
			continue
		}
		a, b := strings.Split(before[f], "\n"), strings.Split(read(t, root, f), "\n")
		if len(a) != len(b) {
			t.Errorf("%s: %d lines, was %d", f, len(b), len(a))
			continue
		}
		for i := range a {
			if a[i] != b[i] && !strings.Contains(b[i], next) {
				t.Errorf("%s:%d changed to %q", f, i+1, b[i])
			}
		}
	}
	// The changelog: the [Unreleased] entries now under the new version,
	// Unreleased empty, the links moved on.
	cl := read(t, root, ChangelogFile)
	if !strings.Contains(cl, "## [Unreleased]\n\n## ["+next+"] - 2027-01-02\n") {
		t.Errorf("CHANGELOG.md has no empty [Unreleased] followed by [%s]:\n%s", next, cl)
	}
	for _, want := range []string{
		"[Unreleased]: https://github.com/plantstore/plantstore/compare/v" + next + "...HEAD\n",
		"[" + next + "]: https://github.com/plantstore/plantstore/compare/v" + current(t) + "...v" + next + "\n",
		"## [" + current(t) + "] - ",
	} {
		if !strings.Contains(cl, want) {
			t.Errorf("CHANGELOG.md lacks %q", want)
		}
	}
	// set is idempotent.
	if err := Set(root, next, "2027-01-03"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, root, ChangelogFile); got != cl {
		t.Errorf("a second set changed CHANGELOG.md")
	}
}

// The [Unreleased] entries move under the new release's heading.
func TestChangelogRelease(t *testing.T) {
	in := "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- a thing\n\n## [1.0.0] - 2026-01-01\n\n- first\n\n" +
		"[Unreleased]: https://example.com/r/compare/v1.0.0...HEAD\n[1.0.0]: https://example.com/r/releases/tag/v1.0.0\n"
	want := "# Changelog\n\n## [Unreleased]\n\n## [1.1.0] - 2026-02-03\n\n### Added\n\n- a thing\n\n## [1.0.0] - 2026-01-01\n\n- first\n\n" +
		"[Unreleased]: https://example.com/r/compare/v1.1.0...HEAD\n[1.1.0]: https://example.com/r/compare/v1.0.0...v1.1.0\n[1.0.0]: https://example.com/r/releases/tag/v1.0.0\n"
	got, err := changelogRelease(in, "1.1.0", "2026-02-03")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if _, err := changelogRelease("# Changelog\n", "1.1.0", "2026-02-03"); err == nil {
		t.Error("a changelog without [Unreleased] was released")
	}
}

// set refuses what is not X.Y.Z, and writes nothing then.
func TestSetRejects(t *testing.T) {
	root := copyRepo(t)
	for _, v := range []string{"v1.2", "v1.2.0", "1.2", "1", "", "01.2.0", "1.02.0", "1.2.0+build.1", "1.2.0-", "1.2.0.1", " 1.2.0", "1.2.0\n", "latest"} {
		if err := Set(root, v, "2027-01-02"); err == nil {
			t.Errorf("set %q: no error", v)
		}
	}
	for _, v := range []string{"0.0.0", "1.2.0", "10.20.30", "1.2.0-rc.1", "1.2.0-alpha-2.x"} {
		if err := ValidVersion(v); err != nil {
			t.Errorf("ValidVersion(%q): %v", v, err)
		}
	}
	if err := Set(root, "1.2.0", "02/01/2027"); err == nil {
		t.Error("set with a malformed date: no error")
	}
	for _, p := range check(t, root) {
		t.Errorf("after refused sets: %s", p)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-root", root, "set", "v1.2"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "not a semantic version") {
		t.Errorf("run set v1.2: exit %d, stderr %q", code, &stderr)
	}
}

// set writes nothing when one place cannot be found.
func TestSetAllOrNothing(t *testing.T) {
	root := copyRepo(t)
	edit(t, root, "k8s/base/deployment.yaml", `service\.version=[^,\s]+`, "")
	if err := Set(root, "1.2.0", "2027-01-02"); err == nil {
		t.Fatal("set succeeded without service.version in deployment.yaml")
	}
	if got := read(t, root, VersionFile); got != current(t)+"\n" {
		t.Errorf("VERSION = %q after a failed set", got)
	}
	if got := read(t, root, "charts/plantstore/Chart.yaml"); !strings.Contains(got, "\nversion: "+current(t)+"\n") {
		t.Error("Chart.yaml written by a failed set")
	}
}
