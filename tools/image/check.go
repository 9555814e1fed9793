package main

import (
	"bytes"
	"fmt"
	goversion "go/version"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// What the image must be. The issue asks for a static, trimmed, stamped build
// and a minimal non-root runtime with both ports; these are its terms.
const (
	modulePath       = "github.com/plantstore/plantstore"
	mainPackage      = "./cmd/plantstore"
	binaryPath       = "/plantstore"
	runtimeUser      = "65532"
	distrolessStatic = "gcr.io/distroless/static-debian12:nonroot"
	builderImage     = "golang:${GO_VERSION}-bookworm"
	goVersionArg     = "GO_VERSION"
	goModCache       = "/go/pkg/mod"
	goBuildCache     = "/root/.cache/go-build"
)

var (
	requiredPorts  = []string{"8080/tcp", "9090/tcp"}
	requiredLabels = map[string]string{
		"org.opencontainers.image.title":    "plantstore",
		"org.opencontainers.image.source":   "",
		"org.opencontainers.image.version":  "${VERSION}",
		"org.opencontainers.image.revision": "${REVISION}",
		"org.opencontainers.image.licenses": "",
	}
	requiredLdflags = []string{
		"-s", "-w",
		"-X " + modulePath + "/internal/version.Version=${VERSION}",
		"-X " + modulePath + "/internal/version.Revision=${REVISION}",
	}
	ldflagsValue = regexp.MustCompile(`-ldflags[= ]+(?:"([^"]*)"|'([^']*)'|(\S+))`)
)

// goMod holds the two directives of go.mod that pin the toolchain.
type goMod struct {
	Go        string // "1.26.0"
	Toolchain string // "go1.26.8", or ""
}

var (
	goDirective        = regexp.MustCompile(`(?m)^go\s+(\S+)\s*$`)
	toolchainDirective = regexp.MustCompile(`(?m)^toolchain\s+(\S+)\s*$`)
)

func parseGoMod(dt []byte) (goMod, error) {
	m := goDirective.FindSubmatch(dt)
	if m == nil {
		return goMod{}, fmt.Errorf("go.mod has no go directive")
	}
	gm := goMod{Go: string(m[1])}
	if t := toolchainDirective.FindSubmatch(dt); t != nil {
		gm.Toolchain = string(t[1])
	}
	return gm, nil
}

// parsedDockerfile is a Dockerfile split into its stages and global ARGs.
type parsedDockerfile struct {
	stages  []instructions.Stage
	metaArg []instructions.ArgCommand
}

func readDockerfile(path string) (*parsedDockerfile, error) {
	dt, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseDockerfile(dt)
}

func parseDockerfile(dt []byte) (*parsedDockerfile, error) {
	ast, err := parser.Parse(bytes.NewReader(dt))
	if err != nil {
		return nil, err
	}
	stages, metaArgs, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		return nil, err
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("no stages")
	}
	// Evaluate quotes and RUN --mount flags as the frontend does at dispatch,
	// but keep variables as written: LABEL a="${VERSION}" reads ${VERSION}.
	lex := shell.NewLex(ast.EscapeToken)
	expand := func(word string) (string, error) {
		w, _, err := lex.ProcessWord(word, symbolicEnv{})
		return w, err
	}
	for _, st := range stages {
		for _, cmd := range st.Commands {
			switch cmd := cmd.(type) {
			case *instructions.RunCommand:
				err = cmd.Expand(expand)
			case *instructions.LabelCommand:
				err = cmd.Expand(expand)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return &parsedDockerfile{stages: stages, metaArg: metaArgs}, nil
}

// symbolicEnv expands every variable to its own reference: $X gives ${X}.
type symbolicEnv struct{}

func (symbolicEnv) Get(key string) (string, bool) { return "${" + key + "}", true }
func (symbolicEnv) Keys() []string                { return nil }

// globalArg returns the default of a global (pre-FROM) ARG.
func (p *parsedDockerfile) globalArg(name string) (string, bool) {
	for _, a := range p.metaArg {
		for _, kv := range a.Args {
			if kv.Key == name && kv.Value != nil {
				return *kv.Value, true
			}
		}
	}
	return "", false
}

func (p *parsedDockerfile) stage(name string) (*instructions.Stage, int) {
	for i := range p.stages {
		if strings.EqualFold(p.stages[i].Name, name) || fmt.Sprint(i) == name {
			return &p.stages[i], i
		}
	}
	return nil, -1
}

// stripDigest drops an @sha256:... pin, which is allowed on any base image.
func stripDigest(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		return ref[:i]
	}
	return ref
}

// checker collects problems; each is one line a person can act on.
type checker struct {
	problems  []string
	binarySrc string // where the final stage copies the binary from
}

func (c *checker) errorf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// checkDockerfile checks the structure the issue asks for and returns the
// problems found: none means the Dockerfile passes.
func checkDockerfile(dt []byte, gm goMod) (problems []string) {
	c := &checker{}
	p, err := parseDockerfile(dt)
	if err != nil {
		return []string{"Dockerfile does not parse: " + err.Error()}
	}

	c.checkGoVersion(p, gm)

	final := &p.stages[len(p.stages)-1]
	build := c.checkRuntimeStage(p, final)
	if build != nil {
		c.checkBuildStage(build, final)
	}
	return c.problems
}

// checkGoVersion: the builder's Go is on the go directive's line (same
// major.minor) and not older than the go and toolchain directives.
func (c *checker) checkGoVersion(p *parsedDockerfile, gm goMod) {
	v, ok := p.globalArg(goVersionArg)
	if !ok || v == "" {
		c.errorf("global ARG %s with a default (the builder's Go version) is missing", goVersionArg)
		return
	}
	gv := "go" + v
	if !goversion.IsValid(gv) {
		c.errorf("ARG %s=%s is not a Go release version", goVersionArg, v)
		return
	}
	if goversion.Lang(gv) != goversion.Lang("go"+gm.Go) {
		c.errorf("ARG %s=%s is not on go.mod's Go line %s (go %s)", goVersionArg, v, strings.TrimPrefix(goversion.Lang("go"+gm.Go), "go"), gm.Go)
	}
	if goversion.Compare(gv, "go"+gm.Go) < 0 {
		c.errorf("ARG %s=%s is older than go.mod's go %s", goVersionArg, v, gm.Go)
	}
	if gm.Toolchain != "" && goversion.Compare(gv, gm.Toolchain) < 0 {
		c.errorf("ARG %s=%s is older than go.mod's toolchain %s", goVersionArg, v, gm.Toolchain)
	}
}

// checkRuntimeStage checks the final stage and returns the stage its binary
// is copied from.
func (c *checker) checkRuntimeStage(p *parsedDockerfile, final *instructions.Stage) *instructions.Stage {
	base := stripDigest(final.BaseName)
	if base != distrolessStatic && base != "scratch" {
		c.errorf("final stage is FROM %s: want %s (or scratch)", final.BaseName, distrolessStatic)
	}

	var (
		user        string
		ports       []string
		entrypoint  *instructions.EntrypointCommand
		binaryFrom  string
		binarySrc   string
		labels      = map[string]string{}
		args        = map[string]bool{}
		argsMissing []string
	)
	for _, cmd := range final.Commands {
		switch cmd := cmd.(type) {
		case *instructions.RunCommand:
			c.errorf("final stage has RUN %q: the runtime image has no shell", strings.Join(cmd.CmdLine, " "))
		case *instructions.UserCommand:
			user = cmd.User
		case *instructions.ExposeCommand:
			for _, port := range cmd.Ports {
				if !strings.Contains(port, "/") {
					port += "/tcp"
				}
				ports = append(ports, strings.ToLower(port))
			}
		case *instructions.EntrypointCommand:
			entrypoint = cmd
		case *instructions.ArgCommand:
			for _, kv := range cmd.Args {
				args[kv.Key] = true
			}
		case *instructions.LabelCommand:
			for _, kv := range cmd.Labels {
				labels[kv.Key] = kv.Value
				for _, ref := range []string{"VERSION", "REVISION", "LICENSES"} {
					if strings.Contains(kv.Value, "${"+ref+"}") && !args[ref] {
						argsMissing = append(argsMissing, ref)
					}
				}
			}
		case *instructions.CopyCommand:
			for _, src := range cmd.SourcePaths {
				dest := cmd.DestPath
				if strings.HasSuffix(dest, "/") {
					dest += path.Base(src)
				}
				if cmd.From != "" && dest == binaryPath {
					binaryFrom, binarySrc = cmd.From, src
				}
			}
		}
	}

	switch user {
	case runtimeUser, runtimeUser + ":" + runtimeUser:
	case "":
		c.errorf("final stage has no USER: want USER %s:%s (numeric, so that runAsNonRoot can verify it)", runtimeUser, runtimeUser)
	default:
		c.errorf("final stage runs as USER %s: want %s:%s", user, runtimeUser, runtimeUser)
	}
	for _, want := range requiredPorts {
		if !slices.Contains(ports, want) {
			c.errorf("final stage does not EXPOSE %s", want)
		}
	}
	switch {
	case entrypoint == nil:
		c.errorf("final stage has no ENTRYPOINT: want ENTRYPOINT [%q]", binaryPath)
	case entrypoint.PrependShell:
		c.errorf("ENTRYPOINT is in shell form: want the exec form [%q] (there is no shell)", binaryPath)
	case len(entrypoint.CmdLine) == 0 || entrypoint.CmdLine[0] != binaryPath:
		c.errorf("ENTRYPOINT %q does not start %s", entrypoint.CmdLine, binaryPath)
	}
	for key, want := range requiredLabels {
		got, ok := labels[key]
		switch {
		case !ok:
			c.errorf("final stage lacks LABEL %s", key)
		case want != "" && got != want:
			c.errorf("LABEL %s=%q: want %q", key, got, want)
		case got == "":
			c.errorf("LABEL %s is empty", key)
		}
	}
	for _, a := range argsMissing {
		c.errorf("a LABEL uses ${%s} but the final stage declares no ARG %s before it (it would be empty)", a, a)
	}

	if binaryFrom == "" {
		c.errorf("final stage does not COPY --from=<build stage> the binary to %s", binaryPath)
		return nil
	}
	build, idx := p.stage(binaryFrom)
	if build == nil || idx == len(p.stages)-1 {
		c.errorf("COPY --from=%s: no such build stage", binaryFrom)
		return nil
	}
	c.binarySrc = binarySrc
	return build
}

// checkBuildStage checks the builder: base image, the module layer before the
// source, cache mounts, and a static, trimmed, stamped build.
func (c *checker) checkBuildStage(build, final *instructions.Stage) {
	if stripDigest(build.BaseName) != builderImage {
		c.errorf("build stage %q is FROM %s: want %s", build.Name, build.BaseName, builderImage)
	}

	var (
		sawModFiles, sawDownload, sawSource, sawBuild bool
		args                                          = map[string]bool{}
	)
	for _, cmd := range build.Commands {
		switch cmd := cmd.(type) {
		case *instructions.ArgCommand:
			for _, kv := range cmd.Args {
				args[kv.Key] = true
			}
		case *instructions.CopyCommand:
			if cmd.From != "" {
				continue
			}
			srcs := slices.Clone(cmd.SourcePaths)
			slices.Sort(srcs)
			if !sawModFiles {
				if !slices.Equal(srcs, []string{"go.mod", "go.sum"}) {
					c.errorf("build stage: the first COPY is %q: want go.mod and go.sum alone, so that `go mod download` is a layer of its own", cmd.SourcePaths)
				}
				sawModFiles = true
				continue
			}
			if !sawDownload {
				c.errorf("build stage: COPY %q comes before `go mod download`: source changes would invalidate the module layer", cmd.SourcePaths)
			}
			sawSource = true
		case *instructions.RunCommand:
			line := strings.Join(cmd.CmdLine, " ")
			mounts := cacheMounts(cmd)
			switch {
			case strings.Contains(line, "go mod download"):
				if !sawModFiles || sawSource {
					c.errorf("build stage: `go mod download` must follow COPY go.mod go.sum and precede the source")
				}
				if !mounts[goModCache] {
					c.errorf("build stage: `go mod download` has no --mount=type=cache,target=%s", goModCache)
				}
				sawDownload = true
			case strings.Contains(line, "go build"):
				sawBuild = true
				c.checkGoBuild(line, mounts, args)
			}
		}
	}
	if !sawModFiles {
		c.errorf("build stage: no COPY go.mod go.sum")
	}
	if !sawDownload {
		c.errorf("build stage: no RUN go mod download")
	}
	if !sawSource {
		c.errorf("build stage: no COPY of the source")
	}
	if !sawBuild {
		c.errorf("build stage: no RUN go build")
	}
}

func (c *checker) checkGoBuild(line string, mounts map[string]bool, args map[string]bool) {
	fields := strings.Fields(line)
	if !slices.Contains(fields, "CGO_ENABLED=0") {
		c.errorf("go build: CGO_ENABLED=0 is not set on the command: the binary must be static")
	}
	if !slices.Contains(fields, "-trimpath") {
		c.errorf("go build: -trimpath is missing")
	}
	if m := ldflagsValue.FindStringSubmatch(line); m == nil {
		c.errorf("go build: -ldflags is missing")
	} else {
		// The linker's flags, with each -X joined to its value.
		var flags []string
		for _, f := range strings.Fields(m[1] + m[2] + m[3]) {
			if n := len(flags); n > 0 && flags[n-1] == "-X" {
				flags[n-1] += " " + f
				continue
			}
			flags = append(flags, f)
		}
		for _, f := range requiredLdflags {
			if !slices.Contains(flags, f) {
				c.errorf("go build: -ldflags lacks %q", f)
			}
		}
	}
	for _, a := range []string{"VERSION", "REVISION"} {
		if !args[a] {
			c.errorf("go build uses ${%s} but the build stage declares no ARG %s before it", a, a)
		}
	}
	if !slices.Contains(fields, mainPackage) {
		c.errorf("go build: does not build %s", mainPackage)
	}
	if i := slices.Index(fields, "-o"); i < 0 || i+1 >= len(fields) {
		c.errorf("go build: no -o output path")
	} else if c.binarySrc != "" && fields[i+1] != c.binarySrc {
		c.errorf("go build writes %s but the final stage copies %s", fields[i+1], c.binarySrc)
	}
	for _, target := range []string{goModCache, goBuildCache} {
		if !mounts[target] {
			c.errorf("go build: no --mount=type=cache,target=%s", target)
		}
	}
}

func cacheMounts(cmd *instructions.RunCommand) map[string]bool {
	m := map[string]bool{}
	for _, mount := range instructions.GetMounts(cmd) {
		if mount.Type == instructions.MountTypeCache {
			m[mount.Target] = true
		}
	}
	return m
}
