// Command bench is plantstore's performance harness (`make bench-load`). It
// builds the service's release binary and the floor (cmd/floor), starts
// redis-server, OTLP sinks and the servers on loopback, measures them
// alternately, round after round, and writes the figures block of
// docs/performance.md, its chart and the run's data (performance.json).
// With -render it renders the block and the chart again from that data,
// without measuring. docs/performance.md says what it measures and how.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/tools/bench/internal/report"
)

const rootModule = "github.com/plantstore/plantstore"

type options struct {
	rounds       int
	duration     time.Duration
	rateDuration time.Duration
	warmup       time.Duration
	settle       time.Duration
	conns        int
	short        bool
	out, png     string
	repo         string
	benchtime    string
	timeout      time.Duration
	keep         bool
	checkTargets bool
	profile      string
	render       bool
	// The 1.1.0 routes' closed-loop phases, and the plants stored for their reads.
	routeDuration, routeWarmup time.Duration
	routeFill                  int64
	// The creates' closed loops at other numbers of connections than conns,
	// and the flags appended to the service variants' command line.
	sweepConns    []int
	sweepDuration time.Duration
	serviceFlags  []string
	serviceEnv    []string
	// -scale: the store's cost by its size instead (scale.go).
	scaleOn bool
	scale   scaleOptions
}

type harness struct {
	opts  options
	start time.Time
	work  string // temporary directory: binaries, logs, Redis data
	bench string // tools/bench
	token string
	ids   atomic.Int64
	run   *report.Run
	rdb   *redis.Client // the harness's own client of the Redis under test

	mu    sync.Mutex
	procs []*proc
	redis []*redistest.Server // stopped after procs, which use them
	sinks []*sink
}

func main() { os.Exit(realMain()) }

func realMain() int {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&o.rounds, "rounds", 3, "rounds: each measures the floor and the service (in turn, alternating which goes first) and service-all-sampled")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "closed-loop (peak) measurement per round and variant, after the warm-up")
	fs.DurationVar(&o.rateDuration, "rate-duration", 3*time.Second, "open-loop measurement per rate, round and variant, in turns of 500ms that alternate the variants")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "closed-loop warm-up, discarded")
	fs.DurationVar(&o.settle, "settle", time.Second, "wait after start-up before reading the idle RSS")
	fs.IntVar(&o.conns, "conns", 50, "closed-loop connections")
	fs.BoolVar(&o.short, "short", false, "CI variant: 1 round of 1s phases, written to a temporary file unless -out is given; fails when a phase has no figure or a request failed")
	fs.StringVar(&o.out, "out", "", "markdown report whose figures block is rewritten, or a new file (default: <repo>/docs/performance.md; with -short a temporary file); the run's data goes beside it, with .json")
	fs.StringVar(&o.png, "png", "", "chart (default: the -out path with .png)")
	fs.BoolVar(&o.render, "render", false, "measure nothing: render the report's figures block and chart again from the run's data saved beside it (the -out path with .json)")
	fs.StringVar(&o.repo, "repo", "", "plantstore's repository root (default: found from the working directory)")
	fs.StringVar(&o.benchtime, "benchtime", "20000x", "-benchtime of the allocations benchmark (2000x with -short)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up (and tear everything down) after this long")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (binaries, logs, Redis data); it is always kept after a failure")
	fs.BoolVar(&o.checkTargets, "check-targets", false, "exit 1 when a target (of issue 5 or 15) fails")
	fs.DurationVar(&o.routeDuration, "route-duration", 2*time.Second, "closed-loop measurement per 1.1.0 route (GET by id, pages of 20 and 100, DELETE), round and variant (service, floor), after -route-warmup")
	fs.DurationVar(&o.routeWarmup, "route-warmup", 500*time.Millisecond, "closed-loop warm-up of each 1.1.0 route phase, discarded")
	fs.Int64Var(&o.routeFill, "route-fill", 10000, "plants stored in the service's key layout before the 1.1.0 routes' reads")
	sweepConns := fs.String("sweep-conns", "10,200", "creates' closed loops at these numbers of connections besides -conns (comma-separated; empty: none), per round, on a floor and a service started for each (200 alone with -short)")
	fs.DurationVar(&o.sweepDuration, "sweep-duration", 3*time.Second, "closed-loop measurement per -sweep-conns level, round and variant (floor, service), after -warmup (1s with -short)")
	serviceFlags := fs.String("service-flags", "", "flags appended to the service variants' command line, split on spaces (e.g. --redis-batch), recorded in the report")
	serviceEnv := fs.String("service-env", "", "NAME=value settings added to the service variants' environment, split on spaces, overriding the harness's (e.g. OTEL_TRACES_SAMPLER=always_off or GOGC=200), recorded in the report")
	fs.BoolVar(&o.scaleOn, "scale", false, "measure the store's cost by the plants it holds instead (make bench-scale): the sizing block of docs/performance.md, docs/performance-scale.json and .png; the other measurement flags do not apply")
	scaleSizes := fs.String("scale-sizes", "1000000,3000000,10000000", "-scale: the plant counts measured after the base size, ascending (200000 with -short)")
	fs.Int64Var(&o.scale.base, "scale-base", 10000, "-scale: plants of the base size, the one every ratio is taken to")
	fs.DurationVar(&o.scale.window, "scale-window", 2*time.Second, "-scale: closed-loop measurement per operation, connections and size, after -scale-warmup (500ms with -short)")
	fs.IntVar(&o.scale.rounds, "scale-rounds", 3, "-scale: paired rounds of each operation at every size after the base, each beside a phase on a second store of the base size; the ratios are their medians (1 with -short)")
	fs.DurationVar(&o.scale.warmup, "scale-warmup", 500*time.Millisecond, "-scale: closed-loop warm-up, discarded (200ms with -short)")
	fs.Float64Var(&o.scale.forkRate, "fork-rate", 1000, "-scale: creates a second (open loop) during each size's AOF rewrite and RDB snapshot, and during the subscriber's outage")
	fs.Int64Var(&o.scale.migrate, "migrate-plants", 1000000, "-scale: 1.0.0 plants that plantstore migrate-store is timed over (0: none; 5000 with -short)")
	fs.DurationVar(&o.scale.outage, "outage", 10*time.Minute, "-scale: how long the webhook subscriber is down under creates, on the largest store (0: not measured; 2s with -short)")
	fs.DurationVar(&o.scale.drain, "drain", 5*time.Minute, "-scale: how long the harness waits for the outbox to drain once the subscriber is back (10s with -short)")
	fs.StringVar(&o.profile, "profile", "", "after the rounds, run the service once more with --pprof under the closed loop, save its CPU, allocation, heap, mutex, block and goroutine profiles in this directory, and show the CPU profile's breakdown in the report (make bench-load: bin/profile)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// The defaults of -short and -scale, for the flags not given.
	defaults := func(on bool, table map[string]func()) {
		for name, apply := range table {
			if on && !set[name] {
				apply()
			}
		}
	}
	defaults(o.short, map[string]func(){
		"rounds":         func() { o.rounds = 1 },
		"duration":       func() { o.duration = time.Second },
		"rate-duration":  func() { o.rateDuration = time.Second },
		"warmup":         func() { o.warmup = 500 * time.Millisecond },
		"route-duration": func() { o.routeDuration = time.Second },
		"route-warmup":   func() { o.routeWarmup = 250 * time.Millisecond },
		"benchtime":      func() { o.benchtime = "2000x" },
		"sweep-conns":    func() { *sweepConns = "200" },
		"sweep-duration": func() { o.sweepDuration = time.Second },
	})
	defaults(o.scaleOn && o.short, map[string]func(){
		"scale-sizes":    func() { *scaleSizes = "200000" },
		"scale-window":   func() { o.scale.window = 500 * time.Millisecond },
		"scale-warmup":   func() { o.scale.warmup = 200 * time.Millisecond },
		"scale-rounds":   func() { o.scale.rounds = 1 },
		"migrate-plants": func() { o.scale.migrate = 5000 },
		"outage":         func() { o.scale.outage = 2 * time.Second },
		"drain":          func() { o.scale.drain = 10 * time.Second },
	})
	defaults(o.scaleOn && !o.short, map[string]func(){"timeout": func() { o.timeout = 2 * time.Hour }})
	if o.scaleOn {
		var err error
		if o.scale.sizes, err = parseSizes(*scaleSizes, o.scale.base); err != nil || o.scale.window <= 0 || o.scale.rounds < 1 || o.scale.warmup < 0 || !(o.scale.forkRate > 0) || o.scale.migrate < 0 || o.scale.outage < 0 || o.scale.drain <= 0 {
			fmt.Fprintf(os.Stderr, "bench: -scale-sizes must be ascending plant counts above -scale-base (%v); -scale-window, -scale-rounds, -fork-rate positive; -drain positive; -migrate-plants, -outage not negative\n", err)
			return 2
		}
	}
	if o.rounds < 1 || o.duration <= 0 || o.rateDuration <= 0 || o.warmup < 0 || o.conns < 1 ||
		o.routeDuration <= 0 || o.routeWarmup < 0 || o.routeFill < 1 || o.sweepDuration <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -rounds, -duration, -rate-duration, -route-duration, -sweep-duration, -route-fill and -conns must be positive")
		return 2
	}
	var err error
	if o.sweepConns, err = parseConns(*sweepConns, o.conns); err != nil {
		fmt.Fprintf(os.Stderr, "bench: -sweep-conns: %v\n", err)
		return 2
	}
	o.serviceFlags = strings.Fields(*serviceFlags)
	if o.serviceEnv, err = parseEnv(*serviceEnv); err != nil {
		fmt.Fprintf(os.Stderr, "bench: -service-env: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	h := &harness{opts: o, start: time.Now()}
	code, err := h.dispatch(ctx)
	if err != nil {
		h.logf("error: %v", err)
		code = 1
	}
	h.teardown(code != 0)
	return code
}

func (h *harness) logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(h.start).Seconds(), fmt.Sprintf(format, a...))
}

// dispatch runs what the flags ask for: -scale (scale.go), -render, or
// the rounds.
func (h *harness) dispatch(ctx context.Context) (int, error) {
	root, err := findRepo(h.opts.repo)
	if err != nil {
		return 1, err
	}
	h.bench = filepath.Join(root, "tools", "bench")
	out, png, err := h.outputs(root)
	switch {
	case err != nil:
		return 1, err
	case h.opts.scaleOn:
		return h.scaleMain(ctx, root, out)
	case h.opts.render:
		// The report's figures block and chart from the run's data saved
		// beside it, nothing measured.
		run, err := readData[report.Run](dataPath(out))
		if err != nil {
			return 1, err
		}
		if err := write(run, out, png, false); err != nil {
			return 1, err
		}
		h.logf("rendered %s and %s from %s", out, png, dataPath(out))
		return 0, nil
	}
	return h.main(ctx, root, out, png)
}

func (h *harness) main(ctx context.Context, root, out, png string) (int, error) {
	if err := checkSection(out, report.FiguresSection); err != nil {
		return 1, err
	}
	var err error
	if h.work, err = os.MkdirTemp("", "plantstore-bench-"); err != nil {
		return 1, err
	}
	h.run = &report.Run{
		Date:          time.Now(),
		Command:       command(),
		Machine:       machine(),
		Short:         h.opts.short,
		Fractions:     []float64{0.25, 0.5, 0.75},
		Conns:         h.opts.conns,
		Warmup:        h.opts.warmup,
		Duration:      h.opts.duration,
		RateDuration:  h.opts.rateDuration,
		RouteWarmup:   h.opts.routeWarmup,
		RouteDuration: h.opts.routeDuration,
		RouteFill:     h.opts.routeFill,
		SweepConns:    h.opts.sweepConns,
		SweepDuration: h.opts.sweepDuration,
		ServiceFlags:  h.opts.serviceFlags,
		ServiceEnv:    h.opts.serviceEnv,
		OTLPExports:   map[string]int64{},
		OTLPBytes:     map[string]int64{},
		AccessLines:   map[string]int64{},
	}
	h.logf("plantstore bench: repo %s, work dir %s, %d round(s), load average %s", root, h.work, h.opts.rounds, h.run.Machine.LoadBefore)

	if err := h.measure(ctx, root); err != nil {
		// Interrupted, out of time, or a server or phase that could not run:
		// no report from a partial run.
		return 1, err
	}
	h.run.Machine.LoadAfter = loadAverage()
	h.run.Elapsed = time.Since(h.start)
	h.run.Failures = append(h.run.Failures, h.run.Incomplete()...)
	for _, v := range []string{report.Service, report.AllSampled} {
		if len(h.run.Rounds) > 0 && h.run.OTLPExports[v] == 0 {
			h.run.Failures = append(h.run.Failures, v+": the OTLP sink received no export: tracing was not on")
		}
		if len(h.run.Rounds) > 0 && h.run.AccessLines[v] == 0 {
			h.run.Warnings = append(h.run.Warnings, v+": no access log line found (logger \"access\") in its log")
		}
	}

	if len(h.run.Failures) > 0 && h.opts.out == "" && !h.opts.short {
		// A failed run does not overwrite the committed report.
		out, png = filepath.Join(h.work, "performance.md"), filepath.Join(h.work, "performance.png")
		h.logf("the run failed: writing its report to %s, not to docs/", out)
	}
	if err := write(h.run, out, png, true); err != nil {
		return 1, err
	}
	h.logf("wrote %s, %s and %s in %s", out, png, dataPath(out), h.run.Elapsed.Round(time.Second))
	code := h.logFailures(h.run.Failures, "warning", h.run.Warnings)
	for _, t := range h.run.Targets() {
		if !t.Pass() && h.opts.checkTargets {
			code = 1
		}
		h.logf("target (issue %2d) %-48s %s (median %.3g %s)", t.Issue, t.Name, report.Verdict(t.Pass()), t.Measured.Median, t.Unit)
	}
	return code, nil
}

// logFailures logs the run's failures, then its other findings under
// label, one a line; 1 when it failed.
func (h *harness) logFailures(failures []string, label string, others []string) int {
	for _, f := range failures {
		h.logf("FAILURE: %s", f)
	}
	for _, o := range others {
		h.logf("%s: %s", label, o)
	}
	return min(len(failures), 1)
}

// outputs resolves the report's paths: docs/ by default, a temporary
// directory for -short without -out.
func (h *harness) outputs(root string) (out, png string, err error) {
	out = h.opts.out
	switch {
	case out != "":
	case h.opts.short:
		dir, err := os.MkdirTemp("", "plantstore-bench-report-")
		if err != nil {
			return "", "", err
		}
		out = filepath.Join(dir, "performance.md")
	default:
		out = filepath.Join(root, "docs", "performance.md")
	}
	if out, err = filepath.Abs(out); err != nil {
		return "", "", err
	}
	png = h.opts.png
	if png == "" {
		png = strings.TrimSuffix(out, filepath.Ext(out)) + ".png"
	}
	if png, err = filepath.Abs(png); err != nil {
		return "", "", err
	}
	return out, png, nil
}

// dataPath is where the run's data goes beside the report out.
func dataPath(out string) string { return strings.TrimSuffix(out, filepath.Ext(out)) + ".json" }

// checkSection refuses a report out that exists without sec: one that
// cannot take the figures is found before measuring, not after.
func checkSection(out string, sec report.Section) error {
	if previous, err := os.ReadFile(out); err == nil {
		if _, err := sec.Of(previous); err != nil {
			return fmt.Errorf("%s: %w", out, err)
		}
	}
	return nil
}

// readData decodes the run's data saved at path.
func readData[T report.Run | report.ScaleRun](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	run, err := report.Decode[T](b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return run, nil
}

// write draws the chart, renders the run into the report's figures block
// (a new report when out does not exist) and, with save, saves the run's
// data beside it. A report without the block is left as it is.
func write(run *report.Run, out, png string, save bool) error {
	for _, dir := range []string{filepath.Dir(out), filepath.Dir(png)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	run.PNG = ""
	if err := report.Chart(run, png); err != nil {
		run.Failures = append(run.Failures, err.Error())
	} else if rel, err := filepath.Rel(filepath.Dir(out), png); err == nil {
		run.PNG = filepath.ToSlash(rel)
	} else {
		run.PNG = png
	}
	data := ""
	if save {
		data = dataPath(out)
	}
	return writeDoc(out, report.FiguresSection, report.Figures(run), data, run)
}

// writeDoc replaces sec's content in out (a new document when out does not
// exist) and, unless data is "", saves the run's data there first.
func writeDoc[T report.Run | report.ScaleRun](out string, sec report.Section, content []byte, data string, run *T) error {
	previous, err := os.ReadFile(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	md, err := sec.Replace(previous, content)
	if err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if data != "" {
		b, err := report.Encode(run)
		if err != nil {
			return err
		}
		if err := writeFile(data, b); err != nil {
			return err
		}
	}
	return writeFile(out, md)
}

// writeFile replaces path's contents in one rename.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// teardown stops every process the harness started, newest first, and the
// sinks, and removes the work directory unless it should be kept.
func (h *harness) teardown(failed bool) {
	h.mu.Lock()
	procs, servers, sinks := slices.Clone(h.procs), slices.Clone(h.redis), slices.Clone(h.sinks)
	h.mu.Unlock()
	for _, p := range slices.Backward(procs) {
		p.stop()
	}
	for _, s := range servers {
		s.Stop()
	}
	for _, s := range sinks {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.srv.Shutdown(ctx)
		cancel()
	}
	if h.work == "" {
		return
	}
	if failed || h.opts.keep {
		h.logf("work directory kept: %s (logs of every process)", h.work)
		return
	}
	_ = os.RemoveAll(h.work)
}

// build compiles the service as the release does, the floor, and the
// allocation benchmark's test binary, concurrently.
func (h *harness) build(ctx context.Context, root string) (service, floor, perfTest string, perfErr, err error) {
	service = filepath.Join(h.work, "plantstore")
	floor = filepath.Join(h.work, "floor")
	perfTest = filepath.Join(h.work, "perf.test")
	var wg sync.WaitGroup
	var errService, errFloor error
	wg.Go(func() {
		errService = h.goBuild(ctx, root, "build", "-trimpath", "-ldflags", "-s -w", "-o", service, "./cmd/plantstore")
	})
	wg.Go(func() {
		errFloor = h.goBuild(ctx, h.bench, "build", "-trimpath", "-ldflags", "-s -w", "-o", floor, "./cmd/floor")
	})
	wg.Go(func() { perfErr = h.goBuild(ctx, root, "test", "-c", "-o", perfTest, "./internal/perf/") })
	wg.Wait()
	return service, floor, perfTest, perfErr, errors.Join(errService, errFloor)
}

// goBuild runs the go command with args in dir; a build is static, as the
// release's.
func (h *harness) goBuild(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	if args[0] == "build" {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, bytes.TrimSpace(out))
	}
	return nil
}

// parseConns parses -sweep-conns: distinct positive numbers of connections,
// ascending, without conns (the round's own closed loop).
func parseConns(s string, conns int) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number of connections", f)
		}
		if n != conns {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// parseSizes parses -scale-sizes: plant counts, ascending, above base.
func parseSizes(s string, base int64) ([]int64, error) {
	var out []int64
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || n <= base || len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%q is not a plant count above %d and the one before", f, base)
		}
		out = append(out, n)
	}
	return out, nil
}

// findRepo returns the directory of the go.mod of plantstore's root module:
// dir if given, else the nearest one above the working directory.
func findRepo(dir string) (string, error) {
	dir, err := filepath.Abs(dir) // "": the working directory
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modulePath(b) == rootModule {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of %s at or above %s (use -repo)", rootModule, dir)
		}
	}
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// command is the command line that reproduces this run.
func command() string {
	args := []string{"cd tools/bench && go run ./cmd/bench"}
	for _, a := range os.Args[1:] {
		if strings.ContainsAny(a, " '\"$\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

func machine() report.Machine {
	kernel := "unknown"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return report.Machine{
		NProc:      runtime.NumCPU(),
		CPU:        cpuModel(),
		Kernel:     kernel,
		GoVersion:  runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		LoadBefore: loadAverage(),
	}
}

// newToken returns a random API token and the tokens-file line for it.
func newToken() (token, line string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	return token, "sha256:" + hex.EncodeToString(sum[:]) + "\n"
}

// cleanEnv is the harness's environment less anything that configures the
// service or tracing (as the tests', servicetest.CleanEnv), so that only
// what the harness sets applies.
func cleanEnv(extra ...string) []string { return append(servicetest.CleanEnv(), extra...) }

// parseEnv splits -service-env into NAME=value settings.
func parseEnv(s string) ([]string, error) {
	env := strings.Fields(s)
	for _, kv := range env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME=value", kv)
		}
	}
	return env, nil
}
