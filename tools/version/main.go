// Command version keeps the release version in one place: the VERSION file at
// the repository's root. Every other place that states the version is
// written from it and checked against it.
//
//	version [-root DIR] set [-date YYYY-MM-DD] X.Y.Z
//	version [-root DIR] check
//
// set writes X.Y.Z into VERSION and into every place listed in places
// (the chart's version and appVersion, api/openapi.yaml's info.version and
// the lines that state that document's own version, the kustomize base's
// image tag and service.version), and moves CHANGELOG.md's [Unreleased]
// entries under a new "## [X.Y.Z] - DATE" section (Keep a Changelog).
//
// check exits 1, with one line per disagreement naming the file, when a place
// states another version than VERSION, when CHANGELOG.md has no section for
// it, when LICENSE is not the Apache License 2.0, or when the SPDX id
// Apache-2.0 is missing where the license is named (licenses).
//
// Files are edited as text, by regular expressions on the known lines, so that
// comments and formatting stay as they are. `make version-set` and
// `make version-check` (part of `make lint`) run it.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// VersionFile is the one source of the version, relative to the root.
const VersionFile = "VERSION"

// ChangelogFile is the changelog, in Keep a Changelog form.
const ChangelogFile = "CHANGELOG.md"

// LicenseFile holds the license text.
const LicenseFile = "LICENSE"

// SPDX is the license's SPDX identifier.
const SPDX = "Apache-2.0"

// apacheSHA256 is the SHA-256 of the Apache License 2.0 text as the Apache
// Software Foundation publishes it (and Debian ships it as
// /usr/share/common-licenses/Apache-2.0).
const apacheSHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// A place is one statement of the version in a file: the first submatch of
// re is the version. Each re must match exactly once in its file.
type place struct {
	file string
	what string
	re   *regexp.Regexp
}

// places are where the version appears besides VERSION and CHANGELOG.md.
var places = []place{
	{"charts/plantstore/Chart.yaml", "version", regexp.MustCompile(`(?m)^version: *"?([^"\s#]*)"?[ \t]*$`)},
	{"charts/plantstore/Chart.yaml", "appVersion", regexp.MustCompile(`(?m)^appVersion: *"?([^"\s#]*)"?[ \t]*$`)},
	// info.version: the only key named version at two spaces' indent.
	{"api/openapi.yaml", "info.version", regexp.MustCompile(`(?m)^  version: *([^\s#]*)[ \t]*$`)},
	// The prose of info.description and GET /openapi.yaml that states this
	// document's version, and that operation's example. Historical mentions
	// ("Version 1.1.0 adds ...", "as in 1.0.0") are left alone.
	{"api/openapi.yaml", "info.description (this document's version)", regexp.MustCompile(`This document \(version ([^)\s]*)\)`)},
	{"api/openapi.yaml", "GET /openapi.yaml description", regexp.MustCompile(`Returns this OpenAPI document \(version ([^)\s]*)\)`)},
	{"api/openapi.yaml", "GET /openapi.yaml example info.version", regexp.MustCompile(`(?m)^ +example: \|\n +openapi: 3[.0-9]*\n +info:\n +title: [^\n]*\n +version: ([^\s#]*)[ \t]*$`)},
	{"k8s/base/kustomization.yaml", "images: newTag of ghcr.io/plantstore/plantstore", regexp.MustCompile(`(?m)^  - name: ghcr\.io/plantstore/plantstore\n    newTag: *"?([^"\s#]*)"?[ \t]*$`)},
	{"k8s/base/deployment.yaml", "image tag", regexp.MustCompile(`(?m)^ +image: ghcr\.io/plantstore/plantstore:([^\s#]*)[ \t]*$`)},
	{"k8s/base/deployment.yaml", "OTEL_RESOURCE_ATTRIBUTES service.version", regexp.MustCompile(`service\.version=([^,\s]*)`)},
	// The README's quick start: verify, then install that version.
	{"README.md", "quick start: make release-verify VERSION", regexp.MustCompile(`make release-verify REGISTRY=\S+ VERSION=(\S+)`)},
	{"README.md", "quick start: helm install --version", regexp.MustCompile(`oci://\S+/charts/plantstore --version (\S+)`)},
	{"README.md", "the API's version", regexp.MustCompile(`The API is version (\S+), described`)},
	// docs/release.md's commands verify and install the release it names once.
	{"docs/release.md", "verify, then install: V=", regexp.MustCompile(`(?m)^V=(\S+)$`)},
}

// licenses are the places that must name the SPDX id (the first submatch of re).
var licenses = []place{
	{"charts/plantstore/Chart.yaml", "annotation artifacthub.io/license", regexp.MustCompile(`(?m)^  artifacthub\.io/license: *"?([^"\s#]*)"?[ \t]*$`)},
	{"Dockerfile", "ARG LICENSES default", regexp.MustCompile(`(?m)^ARG LICENSES=(\S*)$`)},
	{"tools/image/build.sh", "LICENSES default", regexp.MustCompile(`(?m)^LICENSES=\$\{LICENSES:-([^}]*)\}$`)},
}

// packageDocFile's package comment must name the SPDX id and LICENSE.
const packageDocFile = "cmd/plantstore/main.go"

// Files lists every file check reads, relative to the root.
func Files() []string {
	files := []string{VersionFile, ChangelogFile, LicenseFile, packageDocFile}
	for _, p := range slices.Concat(places, licenses) {
		if !slices.Contains(files, p.file) {
			files = append(files, p.file)
		}
	}
	return files
}

// semverRE is Semantic Versioning 2.0.0 without build metadata, which an image
// tag cannot carry ('+'), and without a leading v.
var semverRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?$`)

// ValidVersion returns an error unless v is X.Y.Z (optionally -prerelease).
func ValidVersion(v string) error {
	if !semverRE.MatchString(v) {
		return fmt.Errorf("version %q is not a semantic version X.Y.Z (no leading v, no build metadata)", v)
	}
	return nil
}

// ReadVersion reads and validates root's VERSION file.
func ReadVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, VersionFile))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if err := ValidVersion(v); err != nil {
		return "", fmt.Errorf("%s: %w", VersionFile, err)
	}
	return v, nil
}

// tree reads the files of a root, each once, and keeps the text that Set
// writes back.
type tree struct {
	root  string
	text  map[string]string
	order []string // the files read, in order
}

func (t *tree) read(file string) (string, error) {
	if s, ok := t.text[file]; ok {
		return s, nil
	}
	b, err := os.ReadFile(filepath.Join(t.root, file))
	if err != nil {
		return "", err
	}
	t.text[file] = string(b)
	t.order = append(t.order, file)
	return string(b), nil
}

// A Problem is one disagreement found by Check.
type Problem struct {
	File string // relative to the root
	Msg  string
}

func (p Problem) String() string { return p.File + ": " + p.Msg }

// Check compares every place with root's VERSION and checks the changelog and
// the license. It returns the disagreements; an error only when VERSION
// cannot be read.
func Check(root string) ([]Problem, error) {
	want, err := ReadVersion(root)
	if err != nil {
		return nil, err
	}
	t := &tree{root: root, text: map[string]string{}}
	var probs []Problem
	add := func(file, format string, args ...any) {
		probs = append(probs, Problem{file, fmt.Sprintf(format, args...)})
	}
	read := func(file string) (string, bool) {
		s, err := t.read(file)
		if err != nil {
			add(file, "cannot be read: %v", err)
		}
		return s, err == nil
	}
	// expect reports each place whose submatch is not value.
	expect := func(ps []place, value, source string) {
		for _, p := range ps {
			s, ok := read(p.file)
			if !ok {
				continue
			}
			if m, err := locate(p.re, s); err != nil {
				add(p.file, "%s: %v", p.what, err)
			} else if got := s[m[0]:m[1]]; got != value {
				add(p.file, "%s is %q, expected %q%s", p.what, got, value, source)
			}
		}
	}
	expect(places, want, " (VERSION)")
	if s, ok := read(ChangelogFile); ok && !changelogSection(want).MatchString(s) {
		add(ChangelogFile, "no section %q for VERSION %s", "## ["+want+"] - YYYY-MM-DD", want)
	}
	if s, ok := read(LicenseFile); ok {
		if sum := sha256.Sum256([]byte(s)); hex.EncodeToString(sum[:]) != apacheSHA256 {
			add(LicenseFile, "is not the Apache License 2.0 text verbatim (sha256 %s, expected %s)", hex.EncodeToString(sum[:]), apacheSHA256)
		}
	}
	expect(licenses, SPDX, "")
	if doc, err := packageDoc(filepath.Join(root, packageDocFile)); err != nil {
		add(packageDocFile, "package doc cannot be read: %v", err)
	} else if !strings.Contains(doc, SPDX) || !strings.Contains(doc, LicenseFile) {
		add(packageDocFile, "package doc does not say it is licensed under %s (SPDX id) and point to %s", SPDX, LicenseFile)
	}
	return probs, nil
}

// locate returns where re's first submatch is in s, which re must match
// exactly once.
func locate(re *regexp.Regexp, s string) ([]int, error) {
	m := re.FindAllStringSubmatchIndex(s, -1)
	switch len(m) {
	case 0:
		return nil, errors.New("not found (expected line: " + re.String() + ")")
	case 1:
		return m[0][2:4], nil
	default:
		return nil, fmt.Errorf("found %d times, expected once", len(m))
	}
}

// packageDoc returns the package comment of the Go file at path.
func packageDoc(path string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return "", err
	}
	return f.Doc.Text(), nil
}

// changelogSection matches the heading of version's section.
func changelogSection(version string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(version) + `\] - [0-9]{4}-[0-9]{2}-[0-9]{2}[ \t]*$`)
}

var (
	unreleasedRE     = regexp.MustCompile(`(?m)^## \[Unreleased\][ \t]*\n`)
	releaseHeadingRE = regexp.MustCompile(`(?m)^## \[([^\]]+)\] - `)
	// [Unreleased]: <base>/compare/v<prev>...HEAD
	unreleasedLinkRE = regexp.MustCompile(`(?m)^\[Unreleased\]: (\S+/compare/)\S+\.\.\.HEAD[ \t]*$`)
)

// Set writes version into VERSION and every place, and gives it a changelog
// section dated date (YYYY-MM-DD) unless it has one. Nothing is written when
// a place cannot be found.
func Set(root, version, date string) error {
	if err := ValidVersion(version); err != nil {
		return err
	}
	if _, err := time.Parse(time.DateOnly, date); err != nil {
		return fmt.Errorf("date %q is not YYYY-MM-DD", date)
	}
	t := &tree{root: root, text: map[string]string{}}
	for _, p := range places {
		s, err := t.read(p.file)
		if err != nil {
			return err
		}
		m, err := locate(p.re, s)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", p.file, p.what, err)
		}
		t.text[p.file] = s[:m[0]] + version + s[m[1]:]
	}
	cl, err := t.read(ChangelogFile)
	if err != nil {
		return err
	}
	if t.text[ChangelogFile], err = changelogRelease(cl, version, date); err != nil {
		return fmt.Errorf("%s: %w", ChangelogFile, err)
	}
	t.text[VersionFile] = version + "\n"
	// An existing file keeps its mode: os.WriteFile only sets it on creation.
	for _, file := range append(t.order, VersionFile) {
		if err := os.WriteFile(filepath.Join(root, file), []byte(t.text[file]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// changelogRelease moves the [Unreleased] entries of changelog s under a new
// "## [version] - date" section, and updates the link references at the
// bottom when they follow the compare/v<prev>...HEAD form. A changelog that
// already has a section for version is returned unchanged.
func changelogRelease(s, version, date string) (string, error) {
	if changelogSection(version).MatchString(s) {
		return s, nil
	}
	loc := unreleasedRE.FindStringIndex(s)
	if loc == nil {
		return "", errors.New("no ## [Unreleased] section to release")
	}
	// The previous release: the first section after [Unreleased].
	prev := ""
	if m := releaseHeadingRE.FindStringSubmatch(s[loc[1]:]); m != nil {
		prev = m[1]
	}
	s = s[:loc[1]] + "\n## [" + version + "] - " + date + "\n" + s[loc[1]:]
	if m := unreleasedLinkRE.FindStringSubmatchIndex(s); m != nil {
		base := s[m[2]:m[3]]
		links := "[Unreleased]: " + base + "v" + version + "...HEAD\n"
		if prev != "" {
			links += "[" + version + "]: " + base + "v" + prev + "...v" + version
		} else {
			links += "[" + version + "]: " + strings.TrimSuffix(base, "compare/") + "releases/tag/v" + version
		}
		s = s[:m[0]] + links + s[m[1]:]
	}
	return s, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", ".", "the repository's root")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: version [-root DIR] set [-date YYYY-MM-DD] X.Y.Z\n       version [-root DIR] check")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch fs.Arg(0) {
	case "set":
		sfs := flag.NewFlagSet("version set", flag.ContinueOnError)
		sfs.SetOutput(stderr)
		date := sfs.String("date", time.Now().UTC().Format(time.DateOnly), "the release's date in CHANGELOG.md")
		if err := sfs.Parse(fs.Args()[1:]); err != nil {
			return 2
		}
		if sfs.NArg() != 1 {
			fs.Usage()
			return 2
		}
		if err := Set(*root, sfs.Arg(0), *date); err != nil {
			fmt.Fprintf(stderr, "version set: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "version set: %s in %s and every place it appears; run version check\n", sfs.Arg(0), VersionFile)
		return 0
	case "check":
		if fs.NArg() != 1 {
			fs.Usage()
			return 2
		}
		probs, err := Check(*root)
		if err != nil {
			fmt.Fprintf(stderr, "version check: %v\n", err)
			return 1
		}
		for _, p := range probs {
			fmt.Fprintln(stderr, p)
		}
		if len(probs) > 0 {
			fmt.Fprintf(stderr, "version check: %d disagreement(s) with %s; `make version-set VERSION=x.y.z` writes every place\n", len(probs), VersionFile)
			return 1
		}
		v, _ := ReadVersion(*root)
		fmt.Fprintf(stdout, "version check: %s everywhere, changelog section present, license %s\n", v, SPDX)
		return 0
	default:
		fs.Usage()
		return 2
	}
}
