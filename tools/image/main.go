// Command imagetool checks plantstore's container image definition offline.
//
//	imagetool lint     lint the Dockerfile with BuildKit's own rules, as `docker build --check` does, offline
//	imagetool check    structural checks of the Dockerfile and .dockerignore
//	imagetool context  stage what the build stage copies (through .dockerignore) into a directory
//	imagetool arg NAME print the default of a global ARG of the Dockerfile
//
// Each takes -C (the build context, default ".") and -f (the Dockerfile,
// default <context>/Dockerfile). lint and check exit 1 on any finding.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet("imagetool "+cmd, flag.ExitOnError)
	contextDir := fs.String("C", ".", "build context directory")
	dockerfile := fs.String("f", "", "Dockerfile (default <context>/Dockerfile)")
	var (
		experimental *bool
		goModPath    *string
		out          *string
	)
	switch cmd {
	case "lint":
		experimental = fs.Bool("experimental", true, "also run BuildKit's experimental rules")
	case "check":
		goModPath = fs.String("gomod", "", "go.mod of the service (default <context>/go.mod)")
	case "context":
		out = fs.String("o", "", "directory to stage the build stage's WORKDIR into (must not exist, or be empty)")
	case "arg":
	default:
		usage()
	}
	_ = fs.Parse(args)
	if *dockerfile == "" {
		*dockerfile = filepath.Join(*contextDir, "Dockerfile")
	}

	var err error
	switch cmd {
	case "lint":
		err = runLint(*contextDir, *dockerfile, *experimental)
	case "check":
		if *goModPath == "" {
			*goModPath = filepath.Join(*contextDir, "go.mod")
		}
		err = runCheck(*contextDir, *dockerfile, *goModPath)
	case "context":
		err = runContext(*contextDir, *dockerfile, *out)
	case "arg":
		if fs.NArg() != 1 {
			usage()
		}
		err = runArg(*dockerfile, fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "imagetool %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: imagetool lint|check|context|arg [-C context] [-f Dockerfile] ...")
	os.Exit(2)
}

func runLint(contextDir, dockerfile string, experimental bool) error {
	start := time.Now()
	r, err := lintDockerfile(context.Background(), contextDir, dockerfile, experimental)
	if err != nil {
		return err
	}
	n, err := printLint(os.Stdout, r)
	if err != nil {
		return err
	}
	rules := "BuildKit's rules"
	if experimental {
		rules += " (experimental ones too)"
	}
	if n > 0 {
		return fmt.Errorf("%s: %d problem(s) under %s", dockerfile, n, rules)
	}
	fmt.Printf("%s: no problems under %s, offline (%s)\n", dockerfile, rules, time.Since(start).Round(time.Millisecond))
	return nil
}

func runCheck(contextDir, dockerfile, goModPath string) error {
	dt, err := os.ReadFile(dockerfile)
	if err != nil {
		return err
	}
	gmdt, err := os.ReadFile(goModPath)
	if err != nil {
		return err
	}
	gm, err := parseGoMod(gmdt)
	if err != nil {
		return err
	}
	problems := checkDockerfile(dt, gm)
	p, err := parseDockerfile(dt)
	if err != nil {
		return err
	}
	build, _ := buildStage(p)
	bc, err := loadBuildContext(contextDir)
	if err != nil {
		return err
	}
	problems = append(problems, checkContext(bc, build)...)
	for _, pr := range problems {
		fmt.Println("FAIL:", pr)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d structural problem(s)", len(problems))
	}
	goVersion, _ := p.globalArg(goVersionArg)
	fmt.Printf("%s: structure ok: builder golang:%s-bookworm (go.mod: go %s), module layer before the source, CGO_ENABLED=0 -trimpath and stamped -ldflags, runtime %s as %s:%s, EXPOSE %s, ENTRYPOINT [%q], OCI labels\n",
		dockerfile, goVersion, gm.Go, stripDigest(p.stages[len(p.stages)-1].BaseName), runtimeUser, runtimeUser, strings.Join(requiredPorts, " "), binaryPath)
	fmt.Printf(".dockerignore: ok: build context %s\n", bc.summary())
	return nil
}

func runContext(contextDir, dockerfile, out string) error {
	if out == "" {
		return fmt.Errorf("-o is required")
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty", out)
	}
	p, err := readDockerfile(dockerfile)
	if err != nil {
		return err
	}
	build, err := buildStage(p)
	if err != nil {
		return err
	}
	bc, err := loadBuildContext(contextDir)
	if err != nil {
		return err
	}
	n, err := stageContext(bc, build, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "staged %d files of the build context (%s) as the %q stage's COPY lines place them\n", n, bc.summary(), build.Name)
	return nil
}

func runArg(dockerfile, name string) error {
	p, err := readDockerfile(dockerfile)
	if err != nil {
		return err
	}
	v, ok := p.globalArg(name)
	if !ok {
		return fmt.Errorf("no global ARG %s with a default", name)
	}
	fmt.Println(v)
	return nil
}
