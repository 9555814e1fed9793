package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"github.com/tonistiigi/fsutil"
)

// buildContext is the build context as BuildKit sends it: the files of the
// context directory that .dockerignore does not exclude, walked by the same
// filter BuildKit sends a local source through (github.com/tonistiigi/fsutil).
type buildContext struct {
	dir   string
	pm    *patternmatcher.PatternMatcher
	files []string // slash-separated, relative to dir, sorted
	bytes int64
}

func loadBuildContext(dir string) (*buildContext, error) {
	var patterns []string
	f, err := os.Open(filepath.Join(dir, ".dockerignore"))
	switch {
	case err == nil:
		patterns, err = ignorefile.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf(".dockerignore: %w", err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, fmt.Errorf(".dockerignore: %w", err)
	}
	bc := &buildContext{dir: dir, pm: pm}
	err = fsutil.WalkDir(context.Background(), dir, &fsutil.FilterOpt{ExcludePatterns: patterns}, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		bc.files = append(bc.files, filepath.ToSlash(p))
		bc.bytes += fi.Size()
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(bc.files)
	return bc, nil
}

// includes tells whether the context holds the file, or any file under the
// directory, rel.
func (bc *buildContext) includes(rel string) bool {
	rel = strings.TrimSuffix(path.Clean(rel), "/")
	for _, f := range bc.files {
		if f == rel || strings.HasPrefix(f, rel+"/") {
			return true
		}
	}
	return false
}

// excluded tells whether .dockerignore excludes a path, whether it exists or not.
func (bc *buildContext) excluded(rel string) bool {
	ok, err := bc.pm.MatchesOrParentMatches(rel)
	return err == nil && ok
}

// Paths the context must keep out (whether or not they exist today) and must
// keep in. The build needs go.mod, go.sum, api/, cmd/ and internal/.
var (
	contextMustExclude = []string{
		".git/config", ".ci/run", "bin/plantstore", "dist/x", "charts/plantstore/Chart.yaml",
		"k8s/base/kustomization.yaml", "tools/go.mod", "tools/image/build.sh", "docs/image.md",
		"README.md", "Makefile", "skaffold.yaml", "Dockerfile", ".dockerignore",
		"internal/store/redis_test.go", "internal/httpapi/testdata/fuzz/x",
	}
	contextMustInclude = []string{
		"go.mod", "go.sum", "api/openapi.yaml", "api/embed.go", "cmd/plantstore/main.go",
		"internal/version/version.go",
	}
)

// checkContext checks .dockerignore against the paths above and against the
// sources that the build stage copies.
func checkContext(bc *buildContext, build *instructions.Stage) []string {
	c := &checker{}
	for _, p := range contextMustExclude {
		if !bc.excluded(p) {
			c.errorf(".dockerignore lets %s into the build context", p)
		}
	}
	for _, p := range contextMustInclude {
		if !bc.includes(p) {
			c.errorf("the build context lacks %s (.dockerignore excludes it, or it is missing)", p)
		}
	}
	for _, f := range bc.files {
		if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, ".md") || strings.Contains("/"+f, "/testdata/") {
			c.errorf("the build context holds %s", f)
		}
	}
	if build != nil {
		for _, cmd := range build.Commands {
			if cp, ok := cmd.(*instructions.CopyCommand); ok && cp.From == "" {
				for _, src := range cp.SourcePaths {
					if !bc.includes(src) {
						c.errorf("build stage copies %s, which is not in the build context", src)
					}
				}
			}
		}
	}
	return c.problems
}

// buildStage returns the stage the final stage copies its binary from.
func buildStage(p *parsedDockerfile) (*instructions.Stage, error) {
	final := p.stages[len(p.stages)-1]
	for _, cmd := range final.Commands {
		if cp, ok := cmd.(*instructions.CopyCommand); ok && cp.From != "" {
			if st, i := p.stage(cp.From); st != nil && i != len(p.stages)-1 {
				return st, nil
			}
		}
	}
	return nil, fmt.Errorf("the final stage copies from no build stage")
}

// stageContext writes into out what the build stage's COPY instructions put
// in its WORKDIR: the directory in which the stage runs `go build`. Only the
// forms this Dockerfile uses are supported (plain paths, no wildcards, no
// --parents, destinations inside the WORKDIR); anything else is an error
// rather than a guess.
func stageContext(bc *buildContext, build *instructions.Stage, out string) (int, error) {
	workdir := "/"
	n := 0
	root := ""
	for _, cmd := range build.Commands {
		switch cmd := cmd.(type) {
		case *instructions.WorkdirCommand:
			if !path.IsAbs(cmd.Path) {
				return n, fmt.Errorf("WORKDIR %s is relative", cmd.Path)
			}
			if root != "" && cmd.Path != root {
				return n, fmt.Errorf("the build stage changes WORKDIR after a COPY: not supported")
			}
			workdir = path.Clean(cmd.Path)
		case *instructions.CopyCommand:
			if cmd.From != "" {
				continue
			}
			if cmd.Parents || len(cmd.ExcludePatterns) > 0 || len(cmd.SourceContents) > 0 {
				return n, fmt.Errorf("COPY %q: --parents, --exclude and heredocs are not supported", cmd.SourcePaths)
			}
			root = workdir
			dest := cmd.DestPath
			if !path.IsAbs(dest) {
				dest = path.Join(workdir, dest)
			}
			destIsDir := strings.HasSuffix(cmd.DestPath, "/") || cmd.DestPath == "." || len(cmd.SourcePaths) > 1
			rel, err := filepath.Rel(workdir, path.Clean(dest))
			if err != nil || strings.HasPrefix(rel, "..") {
				return n, fmt.Errorf("COPY to %s: outside WORKDIR %s, not supported", cmd.DestPath, workdir)
			}
			for _, src := range cmd.SourcePaths {
				if strings.ContainsAny(src, "*?[") {
					return n, fmt.Errorf("COPY %s: wildcards are not supported", src)
				}
				src = strings.TrimPrefix(path.Clean("/"+src), "/")
				copied := 0
				for _, f := range bc.files {
					var target string
					switch {
					case f == src && destIsDir:
						target = path.Join(rel, path.Base(f))
					case f == src:
						target = rel
					case src == "" || strings.HasPrefix(f, src+"/"):
						target = path.Join(rel, strings.TrimPrefix(f, src))
					default:
						continue
					}
					if err := copyFile(filepath.Join(bc.dir, f), filepath.Join(out, filepath.FromSlash(target))); err != nil {
						return n, err
					}
					copied++
				}
				if copied == 0 {
					return n, fmt.Errorf("COPY %s: nothing in the build context", src)
				}
				n += copied
			}
		}
	}
	return n, nil
}

func copyFile(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, fi.Mode().Perm())
}

// summary is one line about the context.
func (bc *buildContext) summary() string {
	return fmt.Sprintf("%d files, %d bytes", len(bc.files), bc.bytes)
}
