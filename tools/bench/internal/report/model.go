// Package report turns the harness's measurements into the figures block of
// docs/performance.md, its chart and the run's data (performance.json), and
// parses the output of the handler-chain Go benchmark.
package report

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/plantstore/plantstore/tools/bench/internal/cpuprof"
	"github.com/plantstore/plantstore/tools/bench/internal/stats"
)

// The variants, in the order the tables show them. Floor is the reference of
// every ratio.
const (
	Service    = "service"
	AllSampled = "service-all-sampled"
	Floor      = "floor"
)

// Variants lists the variants in table order.
var Variants = []string{Service, AllSampled, Floor}

// Latency is one open-loop phase: one variant at one rate.
type Latency struct {
	Rate      float64 // intended requests a second
	Achieved  float64 // answered a second
	Scheduled int64
	Answered  int64
	P50, P99  float64 // milliseconds, from the intended send time
	P999      float64
	LagP99    float64 // milliseconds the generator itself sent late (p99)
	// CPU seconds per 1,000 requests of the server and of the load
	// generator (the harness process) over the phase.
	CPUPer1k, GeneratorCPUPer1k float64
}

// Measure is everything one round measured of one variant.
type Measure struct {
	ReadyMs float64 // exec to /readyz answering 200
	IdleRSS float64 // MiB, after start-up and a settle
	PeakRSS float64 // MiB, VmHWM after the round's load
	// ClosedRSS is VmHWM (MiB) right after the closed loop at Run.Conns,
	// before the open loop: the peak under that load alone.
	ClosedRSS    float64
	Peak         float64 // closed-loop answers a second
	PeakRequests int64
	ClosedP50    float64 // ms, closed loop (coordinated, for information)
	ClosedP99    float64
	CPUSeconds   float64 // server CPU over the closed-loop window
	CPUPer1k     float64 // CPU seconds per 1,000 requests
	// GeneratorCPUPer1k is the load generator's (the harness's) CPU seconds
	// per 1,000 requests over the same window.
	GeneratorCPUPer1k float64
	// AOFBytesPerRequest is Redis's AOF growth over the closed-loop window
	// per request: what each create adds to the AOF, which Redis rewrites
	// each time it doubles.
	AOFBytesPerRequest float64
	Open               []Latency
	Non200, Errors     int64
	Statuses           map[int]int64
	FirstError         string
	// Routes are API 1.1.0's routes' closed-loop phases, by route name
	// (floor and service only).
	Routes map[string]*ClosedMeasure
	// Sweep are the creates' closed-loop phases at Run.SweepConns
	// connections, by number of connections, each on a process started for
	// it (floor and service only).
	Sweep map[int]*ClosedMeasure
}

// ClosedMeasure is one closed-loop phase of one variant in a round: the
// creates at a number of connections (Measure.Sweep), or a 1.1.0 route
// (Measure.Routes).
type ClosedMeasure struct {
	Peak     float64 // answers a second
	Requests int64
	CPUPer1k float64 // server CPU seconds per 1,000 requests
	P50, P99 float64 // ms, closed loop
	// PeakRSS is VmHWM (MiB) of a process that, since its exec, ran only
	// this phase's load (the creates' phases only).
	PeakRSS    float64 `json:",omitempty"`
	Bad        int64   // answers that failed their check (status or body)
	Errors     int64   // requests without an answer, or none to send
	Statuses   map[int]int64
	FirstError string
}

// CreatesAt picks a figure of the creates' closed loop at conns
// connections: the round's closed loop at Run.Conns, else a sweep phase's.
func (r *Run) CreatesAt(conns int, g func(*ClosedMeasure) float64) func(*Measure) float64 {
	return func(m *Measure) float64 {
		if conns == r.Conns {
			rss := m.ClosedRSS
			if rss == 0 {
				rss = math.NaN()
			}
			return g(&ClosedMeasure{Peak: m.Peak, Requests: m.PeakRequests, CPUPer1k: m.CPUPer1k,
				P50: m.ClosedP50, P99: m.ClosedP99, PeakRSS: rss})
		}
		cm := m.Sweep[conns]
		if cm == nil {
			return math.NaN()
		}
		return g(cm)
	}
}

// Pickers of the figures of a closed loop.
var (
	ClosedPeakOf = func(m *ClosedMeasure) float64 { return m.Peak }
	ClosedCPUOf  = func(m *ClosedMeasure) float64 { return m.CPUPer1k }
	ClosedP99Of  = func(m *ClosedMeasure) float64 { return m.P99 }
	ClosedRSSOf  = func(m *ClosedMeasure) float64 { return m.PeakRSS }
)

// ConcurrencyLevels are the numbers of connections the creates' closed
// loops ran at, ascending: Conns and SweepConns.
func (r *Run) ConcurrencyLevels() []int {
	levels := append([]int{r.Conns}, r.SweepConns...)
	slices.Sort(levels)
	return slices.Compact(levels)
}

// HasSweep reports whether the run measures creates at other numbers of
// connections than Conns.
func (r *Run) HasSweep() bool { return r.SweepDuration > 0 && len(r.SweepConns) > 0 }

// The routes of API 1.1.0 the harness measures, in table order.
const (
	RouteGet     = "GET /plants/{id}"
	RouteList20  = "GET /plants?limit=20"
	RouteList100 = "GET /plants?limit=100"
	RouteDelete  = "DELETE /plants/{id}"
)

// Routes lists the 1.1.0 routes in table order.
var Routes = []string{RouteGet, RouteList20, RouteList100, RouteDelete}

// RouteVariants are the variants the routes are measured on.
var RouteVariants = []string{Service, Floor}

// RouteOf picks a figure of one route's measure.
func RouteOf(route string, g func(*ClosedMeasure) float64) func(*Measure) float64 {
	return func(m *Measure) float64 {
		rm := m.Routes[route]
		if rm == nil {
			return math.NaN()
		}
		return g(rm)
	}
}

// Profile is where the service's CPU went under the creates' closed loop,
// from a CPU profile of a run after the rounds.
type Profile struct {
	Dir        string  // where the profiles are
	Conns      int     // closed-loop connections
	Throughput float64 // answers a second under profiling
	cpuprof.Breakdown
}

// Round is one round: each variant measured once, in turn.
type Round struct {
	Rates    []float64 // the open-loop rates: fractions of this round's service peak
	Measures map[string]*Measure
}

// Bench is one sub-benchmark of the handler-chain Go benchmark.
type Bench struct {
	Name        string
	Iterations  int64
	NsPerOp     float64
	BytesPerOp  float64
	AllocsPerOp float64
}

// Machine is what the run ran on.
type Machine struct {
	NProc      int
	CPU        string
	Kernel     string
	GoVersion  string
	Redis      string
	LoadBefore string // /proc/loadavg when the run started
	LoadAfter  string
}

// Run is a whole run of the harness.
type Run struct {
	Date         time.Time
	Command      string
	Machine      Machine
	Appendfsync  string // Redis's AOF fsync policy, the chart's
	Short        bool
	Rounds       []Round
	Fractions    []float64 // of the service peak, e.g. 0.25 0.5 0.75
	Conns        int
	Warmup       time.Duration
	Duration     time.Duration // closed loop, per round and variant
	RateDuration time.Duration // open loop, per rate and variant
	// RouteWarmup and RouteDuration are the 1.1.0 routes' closed-loop
	// phases, per route, round and variant; 0: the routes are not measured.
	RouteWarmup, RouteDuration time.Duration
	RouteFill                  int64 // plants in the store for the reads (besides the creates')
	// SweepConns are the creates' closed loops at other numbers of
	// connections than Conns, each SweepDuration after Warmup, per round and
	// variant (floor and service); none: not measured.
	SweepConns    []int
	SweepDuration time.Duration
	// ServiceFlags were appended to the service variants' command line.
	ServiceFlags []string
	// ServiceEnv (NAME=value) was added to the service variants' environment,
	// after the harness's own settings, which it overrides.
	ServiceEnv []string
	// Profile is the service's CPU profile's breakdown (-profile), or nil.
	Profile       *Profile
	Elapsed       time.Duration
	Allocs        []Bench
	AllocsCommand string
	AllocsError   string
	OTLPExports   map[string]int64 // export requests the sinks received, per variant
	OTLPBytes     map[string]int64
	AccessLines   map[string]int64 // access log lines the service variants wrote
	Failures      []string         // what makes the run fail (exit status 1)
	Warnings      []string
	RedisForks    int64  // Redis's forks during the rounds' phases: 0 unless something else made it fork
	PNG           string // the chart, relative to the markdown file
}

// series returns one figure of one variant over the rounds.
func (r *Run) series(variant string, f func(*Measure) float64) []float64 {
	out := make([]float64, 0, len(r.Rounds))
	for _, rd := range r.Rounds {
		m := rd.Measures[variant]
		if m == nil {
			out = append(out, math.NaN())
			continue
		}
		out = append(out, f(m))
	}
	return out
}

// Figure is the median and spread of one figure of one variant over the rounds.
func (r *Run) Figure(variant string, f func(*Measure) float64) stats.Spread {
	return stats.Summary(r.series(variant, f))
}

// RatioToFloor is the median and spread of the per-round ratios of variant's
// figure to the floor's in the same round.
func (r *Run) RatioToFloor(variant string, f func(*Measure) float64) stats.Spread {
	return stats.Summary(stats.Ratios(r.series(variant, f), r.series(Floor, f)))
}

// OpenAt returns a function picking the open-loop figure g at rate level i.
func OpenAt(i int, g func(Latency) float64) func(*Measure) float64 {
	return func(m *Measure) float64 {
		if i >= len(m.Open) {
			return math.NaN()
		}
		return g(m.Open[i])
	}
}

// Pickers of the figures the tables show.
var (
	PeakOf     = func(m *Measure) float64 { return m.Peak }
	CPUOf      = func(m *Measure) float64 { return m.CPUPer1k }
	IdleRSSOf  = func(m *Measure) float64 { return m.IdleRSS }
	PeakRSSOf  = func(m *Measure) float64 { return m.PeakRSS }
	ReadyOf    = func(m *Measure) float64 { return m.ReadyMs }
	P50Of      = func(l Latency) float64 { return l.P50 }
	P99Of      = func(l Latency) float64 { return l.P99 }
	P999Of     = func(l Latency) float64 { return l.P999 }
	AchievedOf = func(l Latency) float64 { return l.Achieved }
	LagOf      = func(l Latency) float64 { return l.LagP99 }
	GenCPUOf   = func(m *Measure) float64 { return m.GeneratorCPUPer1k }
	AOFOf      = func(m *Measure) float64 { return m.AOFBytesPerRequest }
)

// Target is one target of an issue and whether the run met it.
type Target struct {
	Issue    int // the issue that set it
	Name     string
	Measured stats.Spread
	Unit     string
	Limit    float64
	AtLeast  bool // the figure must be >= Limit (else <=)
}

// Pass reports whether the median meets the target.
func (t Target) Pass() bool {
	if !t.Measured.Valid() {
		return false
	}
	if t.AtLeast {
		return t.Measured.Median >= t.Limit
	}
	return t.Measured.Median <= t.Limit
}

// Targets evaluates the issues' targets on the medians over the rounds:
// issue 5's (telemetry's cost at 50 connections, memory and start-up), then
// issue 15's (creates at each number of connections, latency at 25 % of the
// service's peak and peak RSS at the most connections, each against the
// floor; the 1.1.0 routes).
func (r *Run) Targets() []Target {
	half, quarter := slices.Index(r.Fractions, 0.5), slices.Index(r.Fractions, 0.25)
	targets := []Target{
		{Issue: 5, Name: "service peak ≥ 0.85 × floor", Measured: r.RatioToFloor(Service, PeakOf), Unit: "×", Limit: 0.85, AtLeast: true},
		{Issue: 5, Name: "service-all-sampled peak ≥ 0.7 × floor", Measured: r.RatioToFloor(AllSampled, PeakOf), Unit: "×", Limit: 0.7, AtLeast: true},
		{Issue: 5, Name: "service p99 ≤ 5 ms at 50 % of peak", Measured: r.Figure(Service, OpenAt(half, P99Of)), Unit: "ms", Limit: 5},
		{Issue: 5, Name: "service idle RSS ≤ 30 MiB", Measured: r.Figure(Service, IdleRSSOf), Unit: "MiB", Limit: 30},
		{Issue: 5, Name: "service ready ≤ 200 ms after exec", Measured: r.Figure(Service, ReadyOf), Unit: "ms", Limit: 200},
	}
	levels := r.ConcurrencyLevels()
	if !r.HasSweep() {
		levels = []int{r.Conns}
	}
	for _, c := range levels {
		limit := 0.9
		if c == r.Conns {
			limit = 1.0
		}
		targets = append(targets, Target{Issue: 15, Name: fmt.Sprintf("creates at %d connections ≥ %.1f × floor", c, limit),
			Measured: r.RatioToFloor(Service, r.CreatesAt(c, ClosedPeakOf)), Unit: "×", Limit: limit, AtLeast: true})
	}
	targets = append(targets, Target{Issue: 15, Name: "service p99 at 25 % of its peak ≤ 1.2 × floor's",
		Measured: r.RatioToFloor(Service, OpenAt(quarter, P99Of)), Unit: "×", Limit: 1.2})
	if most := levels[len(levels)-1]; r.HasSweep() {
		targets = append(targets, Target{Issue: 15, Name: fmt.Sprintf("peak RSS at %d connections ≤ 2 × floor's", most),
			Measured: r.RatioToFloor(Service, r.CreatesAt(most, ClosedRSSOf)), Unit: "×", Limit: 2})
	}
	if r.HasRoutes() {
		for _, route := range Routes {
			targets = append(targets, Target{Issue: 15, Name: route + " peak ≥ 0.9 × floor",
				Measured: r.RatioToFloor(Service, RouteOf(route, ClosedPeakOf)), Unit: "×", Limit: 0.9, AtLeast: true})
		}
	}
	return targets
}

// HasRoutes reports whether the run measures the 1.1.0 routes.
func (r *Run) HasRoutes() bool { return r.RouteDuration > 0 }

// Incomplete lists the figures a run should have and does not: a phase that
// produced no number, or requests that did not answer 200.
func (r *Run) Incomplete() []string {
	if len(r.Rounds) == 0 {
		return []string{"no round completed"}
	}
	var out []string
	for i, rd := range r.Rounds {
		for _, v := range Variants {
			add := func(what string) { out = append(out, fmt.Sprintf("round %d, %s: %s", i+1, v, what)) }
			check := func(name string, x float64) {
				if !(x > 0) || math.IsInf(x, 0) {
					add(name + " missing")
				}
			}
			m := rd.Measures[v]
			if m == nil {
				add("not measured")
				continue
			}
			check("ready time", m.ReadyMs)
			check("idle RSS", m.IdleRSS)
			check("peak RSS", m.PeakRSS)
			check("peak RSS under the closed loop", m.ClosedRSS)
			check("peak throughput", m.Peak)
			check("CPU per 1,000 requests", m.CPUPer1k)
			if len(m.Open) != len(r.Fractions) {
				add("open-loop phases missing")
			}
			for _, l := range m.Open {
				check("open-loop p50", l.P50)
				check("open-loop p99", l.P99)
				check("open-loop p99.9", l.P999)
				if l.Answered < l.Scheduled {
					add("open loop: requests unanswered")
				}
			}
			if m.Non200 > 0 || m.Errors > 0 {
				add(failures(m.Statuses, m.Non200, m.Errors, m.FirstError))
			}
			if !slices.Contains(RouteVariants, v) {
				continue
			}
			for _, c := range r.SweepConns {
				cm, name := m.Sweep[c], fmt.Sprintf("creates at %d connections", c)
				if !r.HasSweep() {
					break
				}
				if cm == nil {
					add(name + ": not measured")
					continue
				}
				if !(cm.Peak > 0) || math.IsInf(cm.Peak, 0) || !(cm.CPUPer1k > 0) || !(cm.PeakRSS > 0) {
					add(name + ": peak, CPU or peak RSS missing")
				}
				if cm.Bad > 0 || cm.Errors > 0 {
					add(name + ": " + failures(cm.Statuses, cm.Bad, cm.Errors, cm.FirstError))
				}
			}
			for _, route := range Routes {
				rm := m.Routes[route]
				if !r.HasRoutes() {
					break
				}
				if rm == nil {
					add(route + ": not measured")
					continue
				}
				if !(rm.Peak > 0) || math.IsInf(rm.Peak, 0) || !(rm.CPUPer1k > 0) {
					add(route + ": peak or CPU missing")
				}
				if rm.Bad > 0 || rm.Errors > 0 {
					add(fmt.Sprintf("%s: %d bad answers, %d requests without an answer (first: %s)", route, rm.Bad, rm.Errors, rm.FirstError))
				}
			}
		}
	}
	if r.AllocsError != "" {
		out = append(out, "allocations benchmark: "+r.AllocsError)
	} else if len(r.Allocs) == 0 {
		out = append(out, "allocations benchmark: no result")
	}
	return out
}
