package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/subrequests/lint"
)

const repoRoot = "../.."

func readRepo(t *testing.T, name string) []byte {
	t.Helper()
	dt, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return dt
}

func repoGoMod(t *testing.T) goMod {
	t.Helper()
	gm, err := parseGoMod(readRepo(t, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	return gm
}

// writeContext makes a build context with the given files.
func writeContext(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// lintDir lints dir/Dockerfile with dir as the context.
func lintDir(t *testing.T, dir string, experimental bool) *lint.LintResults {
	t.Helper()
	r, err := lintDockerfile(context.Background(), dir, filepath.Join(dir, "Dockerfile"), experimental)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// ruleNames lists the rule of each warning, in order.
func ruleNames(r *lint.LintResults) []string {
	var names []string
	for _, w := range r.Warnings {
		names = append(names, w.RuleName)
	}
	return names
}

func TestRepoDockerfileLintsClean(t *testing.T) {
	r := lintDir(t, repoRoot, true)
	var b strings.Builder
	if n, _ := printLint(&b, r); n != 0 {
		t.Fatalf("%d lint problem(s):\n%s", n, b.String())
	}
}

// The offline lint must be the real thing: each of BuildKit's rules below
// fires on a Dockerfile that breaks it, CopyIgnoredFile included (it needs
// .dockerignore from the context, read through the offline gateway).
func TestLintRulesFireOffline(t *testing.T) {
	dir := writeContext(t, map[string]string{
		".dockerignore": "secret.txt\n",
		"secret.txt":    "x",
		"Dockerfile": `FROM golang:1.26.11-bookworm as Build
ENV FOO bar
ARG API_TOKEN=abc
COPY secret.txt /s
WORKDIR src
# not a description of the stage
FROM ${NOPE:-scratch} AS final
COPY --from=Build /s /s
EXPOSE 8080/TCP
CMD /s
`,
	})
	r := lintDir(t, dir, true)
	got := ruleNames(r)
	for _, rule := range []string{
		"FromAsCasing", "StageNameCasing", "LegacyKeyValueFormat", "SecretsUsedInArgOrEnv",
		"CopyIgnoredFile", "WorkdirRelativePath", "UndefinedArgInFrom", "ExposeProtoCasing",
		"JSONArgsRecommended", "InvalidDefinitionDescription",
	} {
		if !slices.Contains(got, rule) {
			t.Errorf("rule %s did not fire; got %v", rule, got)
		}
	}
	var b strings.Builder
	if n, err := printLint(&b, r); err != nil || n != len(r.Warnings) {
		t.Errorf("printLint = %d, %v; want %d warnings", n, err, len(r.Warnings))
	}
	if !strings.Contains(b.String(), "WARNING: CopyIgnoredFile") {
		t.Errorf("printed report lacks the CopyIgnoredFile warning:\n%s", b.String())
	}
}

// Experimental rules run only when asked for, as in `docker build --check`.
func TestLintExperimentalOptIn(t *testing.T) {
	dir := writeContext(t, map[string]string{"Dockerfile": "# not a description\nFROM scratch AS final\nCOPY a /a\n", "a": ""})
	for _, exp := range []bool{false, true} {
		if got := slices.Contains(ruleNames(lintDir(t, dir, exp)), "InvalidDefinitionDescription"); got != exp {
			t.Errorf("experimental=%v: InvalidDefinitionDescription fired=%v", exp, got)
		}
	}
}

// A base image the offline resolver does not know is a build error, not a pass.
func TestLintUnknownBaseImage(t *testing.T) {
	dir := writeContext(t, map[string]string{"Dockerfile": "FROM alpine:3.22\nENTRYPOINT [\"/bin/true\"]\n"})
	r := lintDir(t, dir, false)
	if r.Error == nil || !strings.Contains(r.Error.Message, "basemeta.json") {
		t.Fatalf("want a build error naming basemeta.json, got %+v", r.Error)
	}
	var b strings.Builder
	if n, _ := printLint(&b, r); n == 0 {
		t.Error("a build error counts as a problem")
	}
}

func TestResolveImageEnv(t *testing.T) {
	cfg, err := resolveImage("golang:1.26.11-bookworm")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "GOLANG_VERSION=1.26.11") {
		t.Errorf("config lacks the version: %s", cfg)
	}
	if _, err := resolveImage("gcr.io/distroless/static-debian12:nonroot@sha256:" + strings.Repeat("a", 64)); err != nil {
		t.Errorf("a digest-pinned base must resolve: %v", err)
	}
	if _, err := resolveImage("gcr.io/distroless/static-debian12:latest"); err == nil {
		t.Error("the root variant of distroless must not resolve")
	}
}

func TestRepoDockerfileStructure(t *testing.T) {
	if problems := checkDockerfile(readRepo(t, "Dockerfile"), repoGoMod(t)); len(problems) > 0 {
		t.Fatalf("problems:\n%s", strings.Join(problems, "\n"))
	}
}

// Each mutation of the repository's Dockerfile must be caught with a clear
// message: the check is only worth something if it fails.
func TestStructureCatchesRegressions(t *testing.T) {
	orig := string(readRepo(t, "Dockerfile"))
	gm := repoGoMod(t)
	cases := []struct {
		name, old, new, want string
	}{
		{"root user", "USER 65532:65532", "USER root", "runs as USER root"},
		{"named user", "USER 65532:65532", "USER nonroot", "runs as USER nonroot"},
		{"no user", "USER 65532:65532\n", "", "has no USER"},
		{"admin port", "EXPOSE 8080/tcp 9090/tcp", "EXPOSE 8080/tcp", "does not EXPOSE 9090/tcp"},
		{"api port", "EXPOSE 8080/tcp 9090/tcp", "EXPOSE 9090", "does not EXPOSE 8080/tcp"},
		{"cgo", "CGO_ENABLED=0", "CGO_ENABLED=1", "CGO_ENABLED=0 is not set"},
		{"trimpath", "go build -trimpath", "go build", "-trimpath is missing"},
		{"strip", `-ldflags "-s -w `, `-ldflags "`, `lacks "-s"`},
		{"strip dwarf", `-ldflags "-s -w `, `-ldflags "-s `, `lacks "-w"`},
		{"revision stamp", "version.Revision=${REVISION}", "version.Commit=${REVISION}", "lacks \"-X github.com/plantstore/plantstore/internal/version.Revision=${REVISION}\""},
		{"no ldflags", "-ldflags", "-gcflags", "-ldflags is missing"},
		{"version stamp", "version.Version=${VERSION}", "version.Version=1.0", "lacks \"-X github.com/plantstore/plantstore/internal/version.Version=${VERSION}\""},
		{"go line", "ARG GO_VERSION=1.26.11", "ARG GO_VERSION=1.25.5", "not on go.mod's Go line"},
		{"builder image", "FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm", "FROM --platform=$BUILDPLATFORM golang:latest", "want golang:${GO_VERSION}-bookworm"},
		{"runtime image", "FROM gcr.io/distroless/static-debian12:nonroot", "FROM debian:bookworm-slim", "want gcr.io/distroless/static-debian12:nonroot"},
		{"runtime root variant", "FROM gcr.io/distroless/static-debian12:nonroot", "FROM gcr.io/distroless/static-debian12:latest", "want gcr.io/distroless/static-debian12:nonroot"},
		{"shell entrypoint", `ENTRYPOINT ["/plantstore"]`, "ENTRYPOINT /plantstore", "shell form"},
		{"source before modules", "COPY go.mod go.sum ./\n", "COPY . .\n", "want go.mod and go.sum alone"},
		{"no mod cache", "RUN --mount=type=cache,target=/go/pkg/mod \\\n    go mod download", "RUN go mod download", "`go mod download` has no --mount=type=cache"},
		{"no build cache", "    --mount=type=cache,target=/root/.cache/go-build \\\n", "", "no --mount=type=cache,target=/root/.cache/go-build"},
		{"label", "org.opencontainers.image.revision=", "org.opencontainers.image.commit=", "lacks LABEL org.opencontainers.image.revision"},
		{"label arg", "FROM gcr.io/distroless/static-debian12:nonroot AS runtime\nARG VERSION=dev\n", "FROM gcr.io/distroless/static-debian12:nonroot AS runtime\n", "declares no ARG VERSION"},
		{"binary path", "-o /out/plantstore", "-o /out/app", "go build writes /out/app but the final stage copies /out/plantstore"},
		{"run in runtime", "USER 65532:65532", "RUN chmod 0555 /plantstore\nUSER 65532:65532", "has RUN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(orig, tc.old) {
				t.Fatalf("the Dockerfile no longer contains %q: update this case", tc.old)
			}
			problems := checkDockerfile([]byte(strings.Replace(orig, tc.old, tc.new, 1)), gm)
			joined := strings.Join(problems, "\n")
			if !strings.Contains(joined, tc.want) {
				t.Fatalf("want a problem containing %q, got:\n%s", tc.want, joined)
			}
		})
	}
}

func TestGoVersionAgainstGoMod(t *testing.T) {
	df := readRepo(t, "Dockerfile")
	for _, tc := range []struct {
		gm   goMod
		want string
	}{
		{goMod{Go: "1.27.0"}, "not on go.mod's Go line"},
		{goMod{Go: "1.26.99"}, "older than go.mod's go"},
		{goMod{Go: "1.26.0", Toolchain: "go1.26.99"}, "older than go.mod's toolchain"},
	} {
		joined := strings.Join(checkDockerfile(df, tc.gm), "\n")
		if !strings.Contains(joined, tc.want) {
			t.Errorf("go.mod %+v: want %q, got %q", tc.gm, tc.want, joined)
		}
	}
}

func TestRepoContext(t *testing.T) {
	bc, err := loadBuildContext(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseDockerfile(readRepo(t, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	build, err := buildStage(p)
	if err != nil {
		t.Fatal(err)
	}
	if problems := checkContext(bc, build); len(problems) > 0 {
		t.Fatalf("problems:\n%s", strings.Join(problems, "\n"))
	}

	out := t.TempDir()
	n, err := stageContext(bc, build, out)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("nothing staged")
	}
	for _, want := range []string{"go.mod", "go.sum", "api/openapi.yaml", "cmd/plantstore/main.go", "internal/version/version.go"} {
		if _, err := os.Stat(filepath.Join(out, want)); err != nil {
			t.Errorf("staged context lacks %s", want)
		}
	}
	for _, unwanted := range []string{"Makefile", "README.md", "tools", "charts", "bin", ".git"} {
		if _, err := os.Stat(filepath.Join(out, unwanted)); err == nil {
			t.Errorf("staged context holds %s", unwanted)
		}
	}
	_ = filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, "_test.go") {
			t.Errorf("staged context holds a test file: %s", p)
		}
		return nil
	})
}

func TestContextCatchesLeaks(t *testing.T) {
	dir := writeContext(t, map[string]string{
		".dockerignore":          ".git\nbin\n",
		"go.mod":                 "module x\n",
		"go.sum":                 "",
		"README.md":              "x",
		"internal/a/a_test.go":   "package a",
		"cmd/plantstore/main.go": "package main",
	})
	bc, err := loadBuildContext(dir)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(checkContext(bc, nil), "\n")
	for _, want := range []string{"lets tools/go.mod into", "lets README.md into", "holds internal/a/a_test.go", "lacks api/openapi.yaml"} {
		if !strings.Contains(joined, want) {
			t.Errorf("want %q in:\n%s", want, joined)
		}
	}
}

func TestStageContextCopySemantics(t *testing.T) {
	dir := writeContext(t, map[string]string{
		"go.mod": "m", "go.sum": "s", "src/a/b.go": "b", "one.txt": "1",
	})
	p, err := parseDockerfile([]byte("FROM golang:1.26.11-bookworm AS build\nWORKDIR /w\nCOPY go.mod go.sum ./\nCOPY src/ code/\nCOPY one.txt renamed.txt\nFROM scratch\nCOPY --from=build /x /x\n"))
	if err != nil {
		t.Fatal(err)
	}
	bc, err := loadBuildContext(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := stageContext(bc, &p.stages[0], out); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"go.mod": "m", "go.sum": "s", "code/a/b.go": "b", "renamed.txt": "1"} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
}
