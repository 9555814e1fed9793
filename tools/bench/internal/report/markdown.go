package report

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore/tools/bench/internal/cpuprof"
	"github.com/plantstore/plantstore/tools/bench/internal/stats"
)

// The markers of the generated block in docs/performance.md. Everything
// outside them (the method, the decision record) is written by hand; the
// harness rewrites only what is between them.
const (
	FiguresBegin = "<!-- figures:begin: written by tools/bench (make bench-load, or -render from performance.json); edit outside the markers only -->"
	FiguresEnd   = "<!-- figures:end -->"
)

// ErrNoFigures is returned for a document without exactly one pair of
// figures markers, in order.
var ErrNoFigures = errors.New("no figures block (" + FiguresBegin + " … " + FiguresEnd + ")")

// A Section is a block of docs/performance.md the harness writes between
// two markers, each there once, in order; the rest is written by hand.
type Section struct {
	Title      string // the heading of a new document of its own
	Begin, End string
	missing    error // the error of a document without the markers
}

// The figures block (make bench-load) and the sizing block (make bench-scale).
var (
	FiguresSection = Section{"# Performance: one run of tools/bench", FiguresBegin, FiguresEnd, ErrNoFigures}
	SizingSection  = Section{"# Sizing: one run of tools/bench -scale", SizingBegin, SizingEnd,
		errors.New("no block " + SizingBegin + " … " + SizingEnd)}
)

// bounds returns where the section's content starts and ends in doc:
// after the begin marker's line, before the end marker.
func (s Section) bounds(doc []byte) (start, end int, err error) {
	b, e := bytes.Index(doc, []byte(s.Begin)), bytes.Index(doc, []byte(s.End))
	if b < 0 || e < b || bytes.Count(doc, []byte(s.Begin)) != 1 || bytes.Count(doc, []byte(s.End)) != 1 {
		return 0, 0, s.missing
	}
	start = b + len(s.Begin)
	if bytes.HasPrefix(doc[start:], []byte("\n")) {
		start++
	}
	return start, e, nil
}

// Of returns the section's content in doc.
func (s Section) Of(doc []byte) ([]byte, error) {
	start, end, err := s.bounds(doc)
	if err != nil {
		return nil, err
	}
	return doc[start:end], nil
}

// Replace returns previous, the document's current contents, with the
// section's content replaced by content and everything else kept verbatim.
// Without a previous document (nil) it writes one of its own: the title
// and the section.
func (s Section) Replace(previous, content []byte) ([]byte, error) {
	if previous == nil {
		previous = []byte(s.Title + "\n\n" + s.Begin + "\n" + s.End + "\n")
	}
	start, end, err := s.bounds(previous)
	if err != nil {
		return nil, err
	}
	return slices.Concat(previous[:start], content, previous[end:]), nil
}

// num formats x with prec decimals, or "–" when it is not a number.
func num(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return fmt.Sprintf("%.*f", prec, x)
}

// cell formats a spread as "median (min–max)", or the median alone when the
// spread is empty.
func cell(s stats.Spread, prec int) string {
	if !s.Valid() {
		return "–"
	}
	m := num(s.Median, prec)
	lo, hi := num(s.Min, prec), num(s.Max, prec)
	if s.N == 1 || lo == hi {
		return m
	}
	return fmt.Sprintf("%s (%s–%s)", m, lo, hi)
}

func ratioCell(r *Run, v string, f func(*Measure) float64, prec int) string {
	if v == Floor {
		return "1 (reference)"
	}
	return cell(r.RatioToFloor(v, f), prec)
}

// Verdict spells whether a target or a goal was met.
func Verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

func pct(f float64) string { return fmt.Sprintf("%.0f %%", f*100) }

// pctf formats a share as a percentage with one decimal.
func pctf(f float64) string { return fmt.Sprintf("%.1f %%", f*100) }

// machineLine is the report's line of what the run ran on; Redis's
// version is the "v=" field of `redis-server --version`, or the whole line
// when it has none.
func machineLine(m Machine, appendfsync string) string {
	redis := m.Redis
	for f := range strings.FieldsSeq(m.Redis) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			redis = "Redis " + v
			break
		}
	}
	return fmt.Sprintf("- machine: %d CPUs (%s), %s, %s, %s (`appendfsync %s`); load average %s at the start, %s at the end\n",
		m.NProc, m.CPU, m.Kernel, m.GoVersion, redis, appendfsync, m.LoadBefore, m.LoadAfter)
}

// Figures renders the run as the content of docs/performance.md's figures
// block: what ran, the issues' targets, then the tables the targets come
// from. The method is the document's own, outside the block.
func Figures(r *Run) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	rounds := len(r.Rounds)

	if r.Short {
		p("> **Short run (`-short`)**: one round of one-second phases, made to check that the harness works, not to\n")
		p("> quote. Use a default run for figures.\n\n")
	}
	flags := "none"
	if len(r.ServiceFlags) > 0 {
		flags = "`" + strings.Join(r.ServiceFlags, " ") + "` (`-service-flags`)"
	}
	if len(r.ServiceEnv) > 0 {
		flags += "; environment `" + strings.Join(r.ServiceEnv, " ") + "` (`-service-env`)"
	}
	p("- run: %s, `%s`, %d round(s), %s; service flags: %s\n", r.Date.UTC().Format(time.RFC3339), r.Command, rounds, r.Elapsed.Round(time.Second), flags)
	p("%s", machineLine(r.Machine, r.Appendfsync))
	p("- phases: creates in a closed loop at %d connections, %s per variant after a %s warm-up", r.Conns, r.Duration, r.Warmup)
	if r.HasSweep() {
		p(", and at %s connections, %s each", joinInts(r.SweepConns), r.SweepDuration)
	}
	if r.HasRoutes() {
		p("; the 1.1.0 routes %s each after %s, %d plants stored", r.RouteDuration, r.RouteWarmup, r.RouteFill)
	}
	p("; the open loop %s per rate and variant\n", r.RateDuration)
	var failed, routeFailed int64
	for _, rd := range r.Rounds {
		for _, m := range rd.Measures {
			failed += m.Non200 + m.Errors
			for _, cm := range m.Sweep {
				failed += cm.Bad + cm.Errors
			}
			for _, rm := range m.Routes {
				routeFailed += rm.Bad + rm.Errors
			}
		}
	}
	p("- checks: %d creates not answered 200, %d route requests failed, %d Redis forks during the rounds", failed, routeFailed, r.RedisForks)
	for _, v := range []string{Service, AllSampled} {
		p("; %s %d OTLP exports (%d KiB), %d access lines", v, r.OTLPExports[v], r.OTLPBytes[v]/1024, r.AccessLines[v])
	}
	p("\n\n")

	if len(r.Failures) > 0 || len(r.Warnings) > 0 {
		for _, f := range r.Failures {
			p("- **failure**: %s\n", f)
		}
		for _, w := range r.Warnings {
			p("- warning: %s\n", w)
		}
		p("\n")
	}

	p("| issue | target | measured | verdict |\n|---|---|---|---|\n")
	for _, t := range r.Targets() {
		prec := 1
		if t.Unit == "×" {
			prec = 3
		}
		p("| %d | %s | %s %s | %s |\n", t.Issue, t.Name, cell(t.Measured, prec), t.Unit, Verdict(t.Pass()))
	}
	p("\n")

	p("Closed loops, median (min–max) over the rounds; CPU: the server's; p99: coordinated; peak RSS: `VmHWM`, one load per process.\n\n")
	p("| load | service req/s | floor req/s | ÷ floor | service CPU s/1k | floor CPU s/1k | service p99 ms | floor p99 ms | service peak RSS MiB | floor peak RSS MiB |\n")
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	levels := []int{r.Conns}
	if r.HasSweep() {
		levels = r.ConcurrencyLevels()
	}
	row := func(name, v string, peak, cpu, p99, rss func(*Measure) float64) {
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name,
			cell(r.Figure(v, peak), 0), cell(r.Figure(Floor, peak), 0), cell(r.RatioToFloor(v, peak), 3),
			cell(r.Figure(v, cpu), 4), cell(r.Figure(Floor, cpu), 4),
			cell(r.Figure(v, p99), 2), cell(r.Figure(Floor, p99), 2),
			cell(r.Figure(v, rss), 1), cell(r.Figure(Floor, rss), 1))
	}
	for _, c := range levels {
		row(fmt.Sprintf("creates, %d connections", c), Service,
			r.CreatesAt(c, ClosedPeakOf), r.CreatesAt(c, ClosedCPUOf), r.CreatesAt(c, ClosedP99Of), r.CreatesAt(c, ClosedRSSOf))
	}
	row(fmt.Sprintf("creates, %d connections, %s", r.Conns, AllSampled), AllSampled,
		r.CreatesAt(r.Conns, ClosedPeakOf), r.CreatesAt(r.Conns, ClosedCPUOf), r.CreatesAt(r.Conns, ClosedP99Of), r.CreatesAt(r.Conns, ClosedRSSOf))
	if r.HasRoutes() {
		none := func(*Measure) float64 { return math.NaN() }
		for _, route := range Routes {
			row(fmt.Sprintf("`%s`, %d connections", route, r.Conns), Service,
				RouteOf(route, ClosedPeakOf), RouteOf(route, ClosedCPUOf), RouteOf(route, ClosedP99Of), none)
		}
	}
	p("\n")

	p("Open loop at fractions of each round's service peak, ms from the intended send time; lag: how late the generator sent.\n\n")
	p("| rate | requests/s sent | service p50 / p99 / p99.9 | service-all-sampled p50 / p99 / p99.9 | floor p50 / p99 / p99.9 | p99 ÷ floor's: service; service-all-sampled | generator lag p99: service; service-all-sampled; floor |\n")
	p("|---|---|---|---|---|---|---|\n")
	for i, f := range r.Fractions {
		rate := make([]float64, 0, rounds)
		for _, rd := range r.Rounds {
			if i < len(rd.Rates) {
				rate = append(rate, rd.Rates[i])
			}
		}
		p("| %s of peak | %s", pct(f), cell(stats.Summary(rate), 0))
		for _, v := range Variants {
			p(" | %s / %s / %s", cell(medianOnly(r.Figure(v, OpenAt(i, P50Of))), 2),
				cell(medianOnly(r.Figure(v, OpenAt(i, P99Of))), 2), cell(medianOnly(r.Figure(v, OpenAt(i, P999Of))), 2))
		}
		p(" | %s; %s", ratioCell(r, Service, OpenAt(i, P99Of), 2), ratioCell(r, AllSampled, OpenAt(i, P99Of), 2))
		lags := make([]string, len(Variants))
		for j, v := range Variants {
			lags[j] = cell(medianOnly(r.Figure(v, OpenAt(i, LagOf))), 2)
		}
		p(" | %s |\n", strings.Join(lags, "; "))
	}
	p("\n")
	if r.PNG != "" {
		alt := "Latency (p50 and p99, log scale) against throughput for the service and the floor"
		if r.HasSweep() {
			alt += "; beside it, the creates' closed-loop throughput by connections, service and floor"
		}
		p("![%s](%s)\n\n", alt, r.PNG)
	}

	p("| variant | idle RSS MiB | peak RSS MiB, whole round | ready ms | load generator's CPU s/1k | Redis AOF bytes per create | AOF ÷ floor |\n|---|---|---|---|---|---|---|\n")
	for _, v := range Variants {
		p("| %s | %s | %s | %s | %s | %s | %s |\n", v, cell(r.Figure(v, IdleRSSOf), 1), cell(r.Figure(v, PeakRSSOf), 1),
			cell(r.Figure(v, ReadyOf), 1), cell(r.Figure(v, GenCPUOf), 4), cell(r.Figure(v, AOFOf), 0), ratioCell(r, v, AOFOf, 2))
	}
	p("\n")

	if pr := r.Profile; pr != nil {
		comps := slices.Clone(pr.Components)
		slices.SortStableFunc(comps, func(a, b cpuprof.Share) int { return cmp.Compare(b.Flat, a.Flat) })
		p("Service CPU profile after the rounds (`--pprof`, %d connections, %.1f s, %.1f s of CPU sampled at %.0f requests/s;\n",
			pr.Conns, pr.Duration, pr.Seconds, pr.Throughput)
		p("`go tool pprof %s`), the share of each component:\n\n| component | flat | through it anywhere |\n|---|---|---|\n", pr.Dir)
		for _, c := range comps {
			if c.Flat < 0.0005 && c.Cum < 0.0005 {
				continue
			}
			through := "" // other has no "through"
			if c.Cum > 0 {
				through = pctf(c.Cum)
			}
			p("| %s | %s | %s |\n", c.Name, pctf(c.Flat), through)
		}
		if len(pr.Top) > 0 {
			top := make([]string, 0, 3)
			for _, f := range pr.Top[:min(3, len(pr.Top))] {
				top = append(top, fmt.Sprintf("`%s` %s", f.Name, pctf(f.Flat)))
			}
			p("\nTop functions: %s.", strings.Join(top, ", "))
		}
		p("\n\n")
	}

	p("Handler chain in-process (`%s`)", r.AllocsCommand)
	if r.AllocsError != "" {
		p(": not measured: %s\n", r.AllocsError)
		return b.Bytes()
	}
	names := make([]string, len(r.Allocs))
	for i, a := range r.Allocs {
		names[i] = a.Name
	}
	prefix := commonPrefix(names)
	p(":\n\n| %s… | ns/op | B/op | allocs/op |\n|---|---|---|---|\n", prefix)
	for _, a := range r.Allocs {
		p("| %s | %s | %s | %s |\n", strings.TrimPrefix(a.Name, prefix), num(a.NsPerOp, 0), num(a.BytesPerOp, 0), num(a.AllocsPerOp, 0))
	}
	return b.Bytes()
}

// medianOnly drops a spread's range, for cells that hold several figures.
func medianOnly(s stats.Spread) stats.Spread {
	s.Min, s.Max = s.Median, s.Median
	return s
}

// commonPrefix is the names' longest common prefix that ends with "/" or
// "=", so that what is left of each name still says what varies.
func commonPrefix(names []string) string {
	if len(names) < 2 {
		return ""
	}
	prefix := names[0]
	for _, n := range names[1:] {
		for !strings.HasPrefix(n, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	return prefix[:strings.LastIndexAny(prefix, "/=")+1]
}

func joinInts(xs []int) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprint(x)
	}
	return strings.Join(out, ", ")
}
