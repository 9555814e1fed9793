package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/builder"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/subrequests/lint"
)

// lintDockerfile runs BuildKit's Dockerfile frontend on the file as
// `docker build --check` does: the "frontend.lint" subrequest of
// frontend/dockerfile/builder.Build, which parses the file, runs every lint
// rule while converting all stages to LLB (dockerfile2llb.DockerfileLint), and
// reads .dockerignore from the context for CopyIgnoredFile. It returns the
// results; a Dockerfile that does not convert at all is reported in
// results.Error. experimental turns on BuildKit's experimental rules as well
// (InvalidDefinitionDescription today), on top of the file's `# check=`.
func lintDockerfile(ctx context.Context, contextDir, dockerfile string, experimental bool) (*lint.LintResults, error) {
	dfAbs, err := filepath.Abs(dockerfile)
	if err != nil {
		return nil, err
	}
	ctxAbs, err := filepath.Abs(contextDir)
	if err != nil {
		return nil, err
	}
	dt, err := os.ReadFile(dfAbs)
	if err != nil {
		return nil, err
	}

	opts := map[string]string{
		"requestid": lint.SubrequestLintDefinition.Name,
		"filename":  filepath.Base(dfAbs),
		// "cmdline" is what BuildKit sets when it runs the frontend that a
		// `# syntax=` line names; setting it keeps the frontend from fetching
		// that image and makes it lint with the rules compiled in here.
		"cmdline": "docker/dockerfile:1",
	}
	if experimental {
		// BUILDKIT_DOCKERFILE_CHECK replaces the file's `# check=` directive,
		// so carry the directive over and add experimental=all to it.
		check, _, _, _ := parser.ParseDirective("check", dt)
		if check != "" {
			check += ";"
		}
		opts["build-arg:BUILDKIT_DOCKERFILE_CHECK"] = check + "experimental=all"
	}

	gw := &offlineGateway{contextDir: ctxAbs, dockerfileDir: filepath.Dir(dfAbs), opts: opts}
	res, err := builder.Build(ctx, gw)
	if err != nil {
		return nil, fmt.Errorf("BuildKit's Dockerfile frontend: %w", err)
	}
	var results lint.LintResults
	if err := json.Unmarshal(res.Metadata["result.json"], &results); err != nil {
		return nil, fmt.Errorf("decoding the lint result: %w", err)
	}
	if code := strings.TrimSpace(string(res.Metadata["result.statuscode"])); code != "" {
		if n, err := strconv.Atoi(code); err == nil && n != 0 && len(results.Warnings) == 0 && results.Error == nil {
			return nil, fmt.Errorf("lint status %d without warnings or error", n)
		}
	}
	return &results, nil
}

// printLint writes the results as `docker build --check` does and returns
// the number of problems: the warnings, plus one for a build error unless
// that error only sums the warnings up (as `# check=error=true` makes it).
func printLint(w io.Writer, r *lint.LintResults) (int, error) {
	dt, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	if err := lint.PrintLintViolations(dt, w, nil); err != nil {
		return 0, err
	}
	n := len(r.Warnings)
	if r.Error != nil {
		fmt.Fprintln(w)
		r.PrintErrorTo(w, nil)
		if n == 0 || !strings.HasPrefix(r.Error.Message, "lint violation found for rules") {
			n++
		}
	}
	return n, nil
}
