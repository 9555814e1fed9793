package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/plantstore/plantstore/tools/bench/internal/load"
	"github.com/plantstore/plantstore/tools/bench/internal/report"
	"github.com/plantstore/plantstore/tools/bench/internal/stats"
)

// maxInFlight bounds the open loop's outstanding requests (and connections).
const maxInFlight = 1000

// openTurn is the length of one variant's turn in the open loop (see round).
const openTurn = 500 * time.Millisecond

// variant is how to start one of the servers under test.
type variant struct {
	name string
	bin  string
	args []string
	env  []string
	sink *sink
}

// running is a variant's server in the current round.
type running struct {
	v variant
	*server
	m *report.Measure
}

func (h *harness) measure(ctx context.Context, root string) error {
	h.logf("building the service (release flags), the floor and the allocation benchmark")
	service, floor, perfTest, perfErr, err := h.build(ctx, root)
	if err != nil {
		return err
	}
	if perfErr != nil {
		h.run.AllocsError = "building the benchmark: " + perfErr.Error()
	}
	redisAddr, serviceArgs, err := h.startStore(ctx, root)
	if err != nil {
		return err
	}
	defer h.rdb.Close()
	variants := []variant{{
		name: report.Floor, bin: floor, env: cleanEnv(),
		args: []string{"--addr", "127.0.0.1:0", "--redis-addr", redisAddr},
	}}
	for _, v := range []struct{ name, sampler, arg string }{
		{report.Service, "parentbased_traceidratio", "0.1"}, // the chart's default
		{report.AllSampled, "always_on", ""},
	} {
		env, s, err := h.tracedEnv(v.sampler, v.arg)
		if err != nil {
			return err
		}
		// Later entries win in exec: -service-env overrides the sampler.
		env = append(env, h.opts.serviceEnv...)
		args := slices.Concat([]string{"--redis-addr", redisAddr}, serviceArgs, h.opts.serviceFlags)
		variants = append(variants, variant{name: v.name, bin: service, args: args, env: env, sink: s})
	}

	h.ids.Store(0)
	for i := range h.opts.rounds {
		if err := resetRedis(ctx, h.rdb); err != nil {
			return fmt.Errorf("emptying Redis before round %d: %w", i+1, err)
		}
		forks0, err := redisInfoInt(ctx, h.rdb, "stats", "total_forks")
		if err != nil {
			return fmt.Errorf("reading Redis's forks: %w", err)
		}
		rd, err := h.round(ctx, i, variants)
		if err != nil {
			return fmt.Errorf("round %d: %w", i+1, err)
		}
		// Redis must not have forked during the round (startRedis says why).
		forks1, err := redisInfoInt(ctx, h.rdb, "stats", "total_forks")
		if err != nil {
			return fmt.Errorf("reading Redis's forks: %w", err)
		}
		h.run.RedisForks += forks1 - forks0
		if forks1 > forks0 {
			h.run.Warnings = append(h.run.Warnings, fmt.Sprintf("round %d: Redis forked %d time(s) during its phases", i+1, forks1-forks0))
		}
		h.run.Rounds = append(h.run.Rounds, rd)
	}
	for _, v := range variants {
		if v.sink != nil {
			h.run.OTLPExports[v.name] = v.sink.exports.Load()
			h.run.OTLPBytes[v.name] = v.sink.bytes.Load()
		}
	}
	if h.opts.profile != "" {
		for _, v := range variants {
			if v.name == report.Service {
				if err := h.profileService(ctx, v, h.opts.profile); err != nil {
					return fmt.Errorf("profiling: %w", err)
				}
				// The report names the profiles' directory from the repository's root when it is inside.
				if rel, err := filepath.Rel(root, h.run.Profile.Dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
					h.run.Profile.Dir = filepath.ToSlash(rel)
				}
			}
		}
	}
	if perfErr == nil {
		h.allocs(ctx, root, perfTest)
	}
	return ctx.Err()
}

func (h *harness) round(ctx context.Context, i int, variants []variant) (report.Round, error) {
	rd := report.Round{Measures: map[string]*report.Measure{}}
	var rs []*running
	defer func() {
		for _, r := range rs {
			r.stop()
		}
	}()
	tag := fmt.Sprintf("round %d/%d", i+1, h.opts.rounds)

	// Start-up, one after the other: time to ready, then the idle RSS.
	for _, v := range variants {
		s, err := h.launch(ctx, v.name, v.bin, v.args, v.env, fmt.Sprintf("%s-round%d.log", v.name, i+1))
		if err != nil {
			return rd, err
		}
		m := &report.Measure{ReadyMs: stats.Millis(s.ready), Statuses: map[int]int64{}}
		rd.Measures[v.name] = m
		rs = append(rs, &running{v: v, server: s, m: m})
		h.logf("%s %-20s ready in %.1f ms (pid %d, %s)", tag, v.name, m.ReadyMs, s.pid(), s.api)
	}
	if !load.Sleep(ctx, h.opts.settle) {
		return rd, ctx.Err()
	}
	for _, r := range rs {
		var err error
		if r.m.IdleRSS, _, err = r.memory(); err != nil {
			return rd, err
		}
	}

	// Peak: closed loop, the floor and the service as a pair (in this
	// round's order), then service-all-sampled. The high-water mark right
	// after it is the peak RSS under this load alone.
	for _, r := range inOrder(rs, append(pair(i), report.AllSampled)) {
		c, err := h.closed(ctx, r, nil, h.opts.conns, h.opts.warmup, h.opts.duration)
		if err != nil {
			return rd, err
		}
		res := c.res
		r.m.Peak = res.Throughput()
		r.m.PeakRequests = res.Requests
		r.m.CPUSeconds = c.cpu
		r.m.CPUPer1k = stats.PerThousand(r.m.CPUSeconds, res.Requests)
		l := stats.Summarise(res.Latencies)
		r.m.ClosedP50, r.m.ClosedP99 = stats.Millis(l.P50), stats.Millis(l.P99)
		tally(r.m, res)
		r.m.GeneratorCPUPer1k = stats.PerThousand(c.generatorCPU, res.Requests)
		if res.Requests > 0 {
			r.m.AOFBytesPerRequest = float64(c.aofBytes) / float64(res.Requests)
		}
		if _, r.m.ClosedRSS, err = r.memory(); err != nil {
			return rd, err
		}
		h.logf("%s %-20s peak %8.0f req/s, CPU %.4f s/1k req (generator %.4f), closed-loop p50 %.2f ms p99 %.2f ms, peak RSS %.1f MiB, failed %d",
			tag, r.v.name, r.m.Peak, r.m.CPUPer1k, r.m.GeneratorCPUPer1k, r.m.ClosedP50, r.m.ClosedP99, r.m.ClosedRSS, res.Failed())
	}

	// Latency: open loop at fractions of this round's service peak, the same
	// absolute rates for every variant.
	peak := rd.Measures[report.Service].Peak
	if !(peak > 0) || math.IsInf(peak, 0) {
		return rd, fmt.Errorf("the service's peak is %v: no rate to run the open loop at", peak)
	}
	for _, f := range h.run.Fractions {
		rd.Rates = append(rd.Rates, peak*f)
	}
	// Each rate runs in turns of about openTurn, every variant once per
	// turn, the variant that goes first changing from turn to turn. The
	// machine's own disturbances (a neighbour's burst of a second or so,
	// which the floor suffers as much as the service) then fall on every
	// variant alike instead of on whichever ran at the time
	// (docs/performance.md).
	turns := max(1, int(h.opts.rateDuration/openTurn))
	for j, rate := range rd.Rates {
		results := make([]load.Result, len(rs))
		cpu := make([]float64, len(rs))
		generator := make([]float64, len(rs))
		for k := range turns {
			for n := range rs {
				v := (n + k) % len(rs)
				r := rs[v]
				s0, _ := cpuSeconds(r.pid())
				g0, _ := cpuSeconds(os.Getpid())
				res, err := r.target.Open(ctx, rate, h.opts.rateDuration/time.Duration(turns), maxInFlight)
				if err != nil {
					return rd, fmt.Errorf("%s: %w", r.v.name, err)
				}
				s1, _ := cpuSeconds(r.pid())
				g1, _ := cpuSeconds(os.Getpid())
				results[v].Add(res)
				cpu[v] += s1 - s0
				generator[v] += g1 - g0
			}
		}
		for v, r := range rs {
			res := results[v]
			l := stats.Summarise(res.Latencies)
			lag := stats.Summarise(res.Lag)
			lat := report.Latency{
				Rate: rate, Achieved: res.Throughput(), Scheduled: res.Scheduled, Answered: res.Requests,
				P50: stats.Millis(l.P50), P99: stats.Millis(l.P99), P999: stats.Millis(l.P999), LagP99: stats.Millis(lag.P99),
				CPUPer1k:          stats.PerThousand(cpu[v], res.Requests),
				GeneratorCPUPer1k: stats.PerThousand(generator[v], res.Requests),
			}
			r.m.Open = append(r.m.Open, lat)
			tally(r.m, res)
			h.logf("%s %-20s %3.0f%% of peak, %6.0f req/s: p50 %6.2f ms p99 %6.2f ms p99.9 %6.2f ms; CPU %.4f s/1k (generator %.4f, its lag p99 %.2f ms); failed %d",
				tag, r.v.name, h.run.Fractions[j]*100, rate, lat.P50, lat.P99, lat.P999, lat.CPUPer1k, lat.GeneratorCPUPer1k, lat.LagP99, res.Failed())
		}
	}

	// Peak RSS: the high-water mark since exec, after the round's create load.
	for _, r := range rs {
		var err error
		if _, r.m.PeakRSS, err = r.memory(); err != nil {
			return rd, err
		}
		h.logf("%s %-20s RSS idle %.1f MiB, peak %.1f MiB", tag, r.v.name, r.m.IdleRSS, r.m.PeakRSS)
	}
	if err := h.routes(ctx, i, tag, rd, rs); err != nil {
		return rd, err
	}
	h.stopAll(rs)
	for _, conns := range h.opts.sweepConns {
		if err := h.sweep(ctx, i, tag, conns, rd, variants); err != nil {
			return rd, fmt.Errorf("creates at %d connections: %w", conns, err)
		}
	}
	return rd, nil
}

// stopAll stops the processes of rs and counts the service variants'
// access log lines.
func (h *harness) stopAll(rs []*running) {
	for _, r := range rs {
		r.stop()
		if r.v.sink != nil {
			h.run.AccessLines[r.v.name] += countAccessLines(r.logPath)
		}
	}
}

// closedRun is a closed loop's result and the CPU seconds the server and
// the load generator (this process) spent over its window.
type closedRun struct {
	res               load.Result
	cpu, generatorCPU float64
	aofBytes          int64 // Redis's AOF growth over the window
}

// closed runs route's closed loop (nil: the creates) against r at conns
// connections for window after warmup.
func (h *harness) closed(ctx context.Context, r *running, route load.Route, conns int, warmup, window time.Duration) (closedRun, error) {
	var c0, c1, g0, g1 float64
	var a0, a1 int64
	var e0, e1, ea0, ea1 error
	pid := r.pid()
	target := r.target
	if route != nil {
		target = target.With(route)
	}
	res, err := target.Closed(ctx, conns, warmup, window,
		func() {
			c0, e0 = cpuSeconds(pid)
			g0, _ = cpuSeconds(os.Getpid())
			a0, ea0 = redisInfoInt(ctx, h.rdb, "persistence", "aof_current_size")
		},
		func() {
			c1, e1 = cpuSeconds(pid)
			g1, _ = cpuSeconds(os.Getpid())
			a1, ea1 = redisInfoInt(ctx, h.rdb, "persistence", "aof_current_size")
		})
	if err != nil {
		return closedRun{}, fmt.Errorf("%s closed loop at %d connections: %w", r.v.name, conns, err)
	}
	if e0 != nil || e1 != nil {
		return closedRun{}, fmt.Errorf("%s: reading CPU time: %v %v", r.v.name, e0, e1)
	}
	if ea0 != nil || ea1 != nil {
		return closedRun{}, fmt.Errorf("%s: reading Redis's AOF size: %v %v", r.v.name, ea0, ea1)
	}
	return closedRun{res: res, cpu: c1 - c0, generatorCPU: g1 - g0, aofBytes: a1 - a0}, nil
}

// figures are the loop's figures, as a sweep or a route phase keeps them.
func (c closedRun) figures() *report.ClosedMeasure {
	l := stats.Summarise(c.res.Latencies)
	return &report.ClosedMeasure{
		Peak: c.res.Throughput(), Requests: c.res.Requests, CPUPer1k: stats.PerThousand(c.cpu, c.res.Requests),
		P50: stats.Millis(l.P50), P99: stats.Millis(l.P99),
		Bad: c.res.Bad, Errors: c.res.Errors, Statuses: c.res.Statuses, FirstError: c.res.FirstError,
	}
}

// pair is the floor and the service in the order round i (from 0) runs
// them: the floor first in odd rounds (1, 3, ...), the service first in
// even ones, so that a drift of the machine within a pair of phases does
// not always favour the same side.
func pair(i int) []string {
	if i%2 == 1 {
		return []string{report.Service, report.Floor}
	}
	return []string{report.Floor, report.Service}
}

// inOrder returns the running variants of rs named in names, in that order.
func inOrder(rs []*running, names []string) []*running {
	var out []*running
	for _, name := range names {
		for _, r := range rs {
			if r.v.name == name {
				out = append(out, r)
			}
		}
	}
	return out
}

func tally(m *report.Measure, res load.Result) {
	for code, n := range res.Statuses {
		m.Statuses[code] += n
	}
	m.Non200 += res.Bad
	m.Errors += res.Errors
	if m.FirstError == "" {
		m.FirstError = res.FirstError
	}
}

// allocs runs the handler-chain benchmark (built by build) on Redis, as
// `go test -run '^$' -bench 'Chain/store=redis' -benchmem -benchtime N -count 1 ./internal/perf/` would.
func (h *harness) allocs(ctx context.Context, root, perfTest string) {
	h.run.AllocsCommand = fmt.Sprintf("go test -run '^$' -bench 'Chain/store=redis' -benchmem -benchtime %s -count 1 ./internal/perf/", h.opts.benchtime)
	h.logf("allocations: %s", h.run.AllocsCommand)
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, perfTest, "-test.run", "^$", "-test.bench", "Chain/store=redis", "-test.benchmem",
		"-test.benchtime", h.opts.benchtime, "-test.count", "1")
	cmd.Dir = filepath.Join(root, "internal", "perf") // where go test runs it
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = procAttr()
	// On time-out or interrupt, the whole group: the benchmark starts its own redis-server.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(filepath.Join(h.work, "allocs.txt"), out, 0o644)
	if err != nil {
		h.run.AllocsError = fmt.Sprintf("%v: %s", err, lastLines(out, 6, " | "))
		return
	}
	for _, b := range report.ParseGoBench(string(out)) {
		if strings.HasPrefix(b.Name, "Chain/store=redis/") {
			h.run.Allocs = append(h.run.Allocs, b)
			h.logf("allocations: %-40s %8.0f ns/op %6.0f B/op %4.0f allocs/op", b.Name, b.NsPerOp, b.BytesPerOp, b.AllocsPerOp)
		}
	}
	if len(h.run.Allocs) == 0 {
		h.run.AllocsError = "no Chain/store=redis result in its output: " + lastLines(out, 6, " | ")
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
