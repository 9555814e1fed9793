package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/plantstore/plantstore/tools/bench/internal/stats"
)

// defaultChanges is the changes section of a new file.
const defaultChanges = `Record here each change that mattered: what changed, and the figures before and after
(median and spread over the rounds of one run of ` + "`make bench`" + ` on each side). The harness keeps
everything between the two markers as it is when it rewrites this file.

| change | figure | before | after |
|---|---|---|---|
`

// Changes returns the text between the changes markers of a previous
// version of the file, verbatim, or the default text when there is none.
func Changes(previous []byte) string {
	s := string(previous)
	b := strings.Index(s, ChangeBegin)
	if b < 0 {
		return defaultChanges
	}
	rest := s[b+len(ChangeBegin):]
	e := strings.Index(rest, ChangeEnd)
	if e < 0 {
		return defaultChanges
	}
	return strings.TrimPrefix(rest[:e], "\n")
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

func pct(f float64) string { return fmt.Sprintf("%.0f %%", f*100) }

// pctf formats a share as a percentage with one decimal.
func pctf(f float64) string { return fmt.Sprintf("%.1f %%", f*100) }

// Markdown renders the run as docs/performance.md, keeping the changes
// section of previous (the file's current contents, or nil).
func Markdown(r *Run, previous []byte) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	rounds := len(r.Rounds)

	p("# Performance\n\n")
	p("<!-- Written by tools/bench (`make bench`). Everything outside the changes markers is regenerated; edit only between them. -->\n\n")
	p("How close the service, with its default telemetry on, runs to **the floor**: a bare net/http handler that only\n")
	p("decodes the body with encoding/json, stores it with one go-redis `SET key value NX GET` and encodes the Plant\n")
	p("(`tools/bench/cmd/floor`). Both run as release builds against the same real `redis-server` (AOF on,\n")
	p("`appendfsync %s` as the chart runs it) on loopback, alternating within each round (the floor and the\n", r.Appendfsync)
	p("service as a pair, the floor first in odd rounds and the service first in even ones, then\n")
	p("service-all-sampled) so that drift of the machine cancels out in the ratios. The service runs with metrics,\n")
	p("access logs (default sampling)\n")
	p("and tracing exported over OTLP/HTTP to a local sink at the chart's sampler (`parentbased_traceidratio`, 0.1);\n")
	p("**service-all-sampled** is the same with `OTEL_TRACES_SAMPLER=always_on`.\n\n")
	p("Every figure is the **median over %d round(s)**, with the spread (min–max) in parentheses. A ratio is the\n", rounds)
	p("median of the per-round ratios to the floor of the same round.\n\n")
	if r.Short {
		p("> **Short run (`-short`)**: one round of one-second phases, made to check that the harness works, not to\n")
		p("> quote. Use a default run for figures.\n\n")
	}

	p("## Run\n\n")
	p("| | |\n|---|---|\n")
	p("| date | %s |\n", r.Date.UTC().Format(time.RFC3339))
	p("| command | `%s` |\n", r.Command)
	p("| machine | %d CPUs, %s |\n", r.Machine.NProc, r.Machine.CPU)
	p("| kernel | %s |\n", r.Machine.Kernel)
	p("| Go | %s |\n", r.Machine.GoVersion)
	p("| Redis | %s |\n", r.Machine.Redis)
	p("| load average (1, 5, 15 min) | %s at the start, %s at the end |\n", r.Machine.LoadBefore, r.Machine.LoadAfter)
	p("| phases | %d round(s); closed loop %s per variant after a %s warm-up, %d connections; open loop %s per rate and variant |\n",
		rounds, r.Duration, r.Warmup, r.Conns, r.RateDuration)
	if r.HasSweep() {
		p("| creates by concurrency | closed loop at %s connections, %s per variant after a %s warm-up, each number of connections on a floor and a service started for it |\n",
			joinInts(r.SweepConns), r.SweepDuration, r.Warmup)
	}
	serviceFlags := "none"
	if len(r.ServiceFlags) > 0 {
		serviceFlags = "`" + strings.Join(r.ServiceFlags, " ") + "` (`-service-flags`), appended to both service variants' command line"
	}
	p("| service flags | %s |\n", serviceFlags)
	if len(r.ServiceEnv) > 0 {
		p("| service environment | `%s` (`-service-env`), added to both service variants' environment |\n", strings.Join(r.ServiceEnv, " "))
	}
	p("| wall time | %s |\n", r.Elapsed.Round(time.Second))
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
	p("| creates not answered 200 | %d |\n", failed)
	p("| Redis forks during the rounds | %d (0 expected: the harness runs Redis with RDB snapshots and automatic AOF rewrites off) |\n", r.RedisForks)
	if r.HasRoutes() {
		p("| 1.1.0 routes | closed loop %s per route and variant after a %s warm-up, %d connections; requests failed (bad status or body, or no answer) %d |\n",
			r.RouteDuration, r.RouteWarmup, r.Conns, routeFailed)
	}
	for _, v := range []string{Service, AllSampled} {
		p("| %s telemetry | %d OTLP exports (%d KiB) received by the sink; %d access log lines written |\n",
			v, r.OTLPExports[v], r.OTLPBytes[v]/1024, r.AccessLines[v])
	}
	p("\n")

	if len(r.Failures) > 0 || len(r.Warnings) > 0 {
		p("## Problems\n\n")
		for _, f := range r.Failures {
			p("- **failure**: %s\n", f)
		}
		for _, w := range r.Warnings {
			p("- warning: %s\n", w)
		}
		p("\n")
	}

	p("## Targets\n\n")
	levels := []int{r.Conns}
	if r.HasSweep() {
		levels = r.ConcurrencyLevels()
	}
	p("From issue 5 (the cost of the default telemetry) and issue 15 (the service against its floor: creates at\n")
	p("%s connections, p99 at 25 %% of its own peak rate, peak RSS under the most connections, the 1.1.0\n", joinInts(levels))
	p("routes), judged on the medians of this run. A ratio is the median of the per-round ratios.\n\n")
	p("| issue | target | measured | verdict |\n|---|---|---|---|\n")
	for _, t := range r.Targets() {
		verdict := "FAIL"
		if t.Pass() {
			verdict = "PASS"
		}
		prec := 1
		if t.Unit == "×" {
			prec = 3
		}
		p("| %d | %s | %s %s | %s |\n", t.Issue, t.Name, cell(t.Measured, prec), t.Unit, verdict)
	}
	p("\n")

	p("## Peak throughput\n\n")
	p("Closed loop, %d connections, fresh ids (every request a real insert), %s per round after a %s warm-up.\n\n", r.Conns, r.Duration, r.Warmup)
	p("| variant | requests/s | ÷ floor |\n|---|---|---|\n")
	for _, v := range Variants {
		p("| %s | %s | %s |\n", v, cell(r.Figure(v, PeakOf), 0), ratioCell(r, v, PeakOf, 3))
	}
	p("\n")

	if r.HasSweep() {
		p("## Creates by concurrency\n\n")
		p("The creates' closed loop (fresh ids, each answer must be 200) at each number of connections, service (the\n")
		p("chart's sampling) and floor alternating within each round as above. %d connections is the round's closed\n", r.Conns)
		p("loop of the table above, on the round's processes; each other number of connections runs, %s after a %s\n", r.SweepDuration, r.Warmup)
		p("warm-up, on a floor and a service started for it. Peak RSS is `VmHWM`, the high-water mark since exec, of a\n")
		p("process that ran only that load: read right after the phase (at %d connections, after the closed loop and\n", r.Conns)
		p("before the open loop). CPU: the server's, per 1,000 requests. p99: closed loop (coordinated, for\n")
		p("information). Ratios are the medians of the per-round ratios; the chart's right panel (under Latency)\n")
		p("draws the requests/s.\n\n")
		p("| connections | service requests/s | floor requests/s | ÷ floor | service CPU s/1k | floor CPU s/1k | service p99 ms | floor p99 ms | service peak RSS MiB | floor peak RSS MiB | RSS ÷ floor |\n")
		p("|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range r.ConcurrencyLevels() {
			peak, cpu, p99, rss := r.CreatesAt(c, ConnsPeakOf), r.CreatesAt(c, ConnsCPUOf), r.CreatesAt(c, ConnsP99Of), r.CreatesAt(c, ConnsRSSOf)
			p("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c,
				cell(r.Figure(Service, peak), 0), cell(r.Figure(Floor, peak), 0), cell(r.RatioToFloor(Service, peak), 3),
				cell(r.Figure(Service, cpu), 4), cell(r.Figure(Floor, cpu), 4),
				cell(r.Figure(Service, p99), 2), cell(r.Figure(Floor, p99), 2),
				cell(r.Figure(Service, rss), 1), cell(r.Figure(Floor, rss), 1), cell(r.RatioToFloor(Service, rss), 2))
		}
		p("\n")
	}

	if r.HasRoutes() {
		p("## API 1.1.0 routes\n\n")
		p("Closed loop, %d connections, %s per round and variant after a %s warm-up, service (chart's sampling) and\n", r.Conns, r.RouteDuration, r.RouteWarmup)
		p("floor alternating (the floor first in odd rounds, the service first in even ones). Before the reads the\n")
		p("harness stores %d plants in the service's key layout (besides those the create phases left); GET asks for\n", r.RouteFill)
		p("one of them at random, and each answer must be 200 and that plant. A list connection walks from the first\n")
		p("page, following each page's `Link` rel=\"next\" (the service's opaque cursor, the floor's own) to the last\n")
		p("page and starting again; each page must be 200, full when a next follows, in id order after the previous\n")
		p("one. DELETE takes fresh ids from a pool stored before the phase, each id once, and each answer must be 204.\n")
		p("The floor does the same Redis work as the service, barely: one `GET`; one pipeline of 16 `ZRANGE BYLEX`\n")
		p("then one of `MGET`s; the service's delete script; no authentication, as for its creates. CPU: the\n")
		p("server's, per 1,000 requests. Ratios are the medians of the per-round ratios.\n\n")
		p("| route | service requests/s | floor requests/s | ÷ floor | service CPU s/1k | floor CPU s/1k | service p99 ms | floor p99 ms |\n|---|---|---|---|---|---|---|---|\n")
		for _, route := range Routes {
			peak, cpu, p99 := RouteOf(route, RoutePeakOf), RouteOf(route, RouteCPUOf), RouteOf(route, RouteP99Of)
			p("| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", route,
				cell(r.Figure(Service, peak), 0), cell(r.Figure(Floor, peak), 0), cell(r.RatioToFloor(Service, peak), 3),
				cell(r.Figure(Service, cpu), 4), cell(r.Figure(Floor, cpu), 4),
				cell(r.Figure(Service, p99), 2), cell(r.Figure(Floor, p99), 2))
		}
		p("\n")
	}

	p("## Latency\n\n")
	p("Open loop at fixed rates, fractions of each round's service peak (the same absolute rates for every variant in\n")
	p("the round), each latency counted from the request's intended send time, so a stall delays every request\n")
	p("scheduled behind it (no coordinated omission). Milliseconds. The generator's lag is how late it sent its\n")
	p("requests itself (p99; already inside the latencies): when it is large, the machine, not only the server,\n")
	p("was out of CPU. Each rate runs in turns of about 500 ms, every variant once per turn, the one going first\n")
	p("changing from turn to turn, so that a disturbance of the machine lasting a second or so falls on every\n")
	p("variant alike; a variant's figures are over all its turns.\n\n")
	p("| rate | requests/s sent | variant | answered/s | p50 | p99 | p99.9 | p99 ÷ floor | generator lag p99 |\n|---|---|---|---|---|---|---|---|---|\n")
	for i, f := range r.Fractions {
		rate := make([]float64, 0, rounds)
		for _, rd := range r.Rounds {
			if i < len(rd.Rates) {
				rate = append(rate, rd.Rates[i])
			}
		}
		for _, v := range Variants {
			p("| %s of peak | %s | %s | %s | %s | %s | %s | %s | %s |\n", pct(f), cell(stats.Summary(rate), 0), v,
				cell(r.Figure(v, OpenAt(i, AchievedOf)), 0),
				cell(r.Figure(v, OpenAt(i, P50Of)), 2), cell(r.Figure(v, OpenAt(i, P99Of)), 2),
				cell(r.Figure(v, OpenAt(i, P999Of)), 2), ratioCell(r, v, OpenAt(i, P99Of), 2),
				cell(r.Figure(v, OpenAt(i, LagOf)), 2))
		}
	}
	p("\n")
	if r.PNG != "" {
		alt := "Latency (p50 and p99, log scale) against throughput for the service and the floor"
		if r.HasSweep() {
			alt += "; beside it, the creates' closed-loop throughput by connections, service and floor"
		}
		p("![%s](%s)\n\n", alt, r.PNG)
	}

	p("## CPU\n\n")
	p("CPU time (user + system, from `/proc/<pid>/stat`) of the server process alone over the closed-loop window,\n")
	p("per 1,000 requests. Redis is not counted; the load generator's own CPU (the harness process, over the same\n")
	p("window) is shown for scale, as it shares the machine. Redis's AOF: what it grew by over the same window, per\n")
	p("create (the service's script is logged as `MULTI`, `SET`, `ZADD`, `EXEC`, the floor's as one `SET`); Redis\n")
	p("rewrites its AOF, a fork, each time it doubles past 64 MB, so the chart's Redis, which keeps those\n")
	p("automatic rewrites, forks that much more often per create than for the floor's.\n\n")
	p("| variant | CPU seconds per 1,000 requests | ÷ floor | load generator's | Redis AOF bytes per create | ÷ floor |\n|---|---|---|---|---|---|\n")
	for _, v := range Variants {
		p("| %s | %s | %s | %s | %s | %s |\n", v, cell(r.Figure(v, CPUOf), 4), ratioCell(r, v, CPUOf, 2), cell(r.Figure(v, GenCPUOf), 4),
			cell(r.Figure(v, AOFOf), 0), ratioCell(r, v, AOFOf, 2))
	}
	p("\n")

	if pr := r.Profile; pr != nil {
		p("## Profile breakdown\n\n")
		p("Where the service's CPU goes under the creates' closed loop: after the rounds the harness runs the service\n")
		p("(the chart's sampling) once more with `--pprof`, %d connections, and takes a CPU profile of %.1f s (%.1f s of\n", pr.Conns, pr.Duration, pr.Seconds)
		p("CPU sampled; %.0f requests/s under profiling, which costs CPU of its own; no other figure comes from this\n", pr.Throughput)
		p("run). **Flat**: the samples whose innermost function of a known component is in it (a `runtime.memmove`\n")
		p("under encoding/json counts for JSON; the column adds up to 100 %%). **Through**: the samples whose stack\n")
		p("passes through it anywhere (overlapping: a Redis call under the service's handler counts in both). The\n")
		p("functions' flat is pprof's (the innermost function itself). Profiles: `%s` (`go tool pprof`).\n\n", pr.Dir)
		p("| component | flat | through |\n|---|---|---|\n")
		for _, c := range pr.Components {
			through := pctf(c.Cum)
			if c.Cum == 0 && c.Flat > 0 { // other: no "through"
				through = "–"
			}
			p("| %s | %s | %s |\n", c.Name, pctf(c.Flat), through)
		}
		p("\n| function (top %d by flat) | flat | through |\n|---|---|---|\n", len(pr.Top))
		for _, f := range pr.Top {
			p("| `%s` | %s | %s |\n", f.Name, pctf(f.Flat), pctf(f.Cum))
		}
		p("\n")
	}

	p("## Memory and start-up\n\n")
	p("Resident memory (`VmRSS`) idle, after start-up and a settle of at least a second; peak (`VmHWM`) after the\n")
	p("round's load. Ready: from exec to `/readyz` answering 200, polled every 2 ms (the floor's `/readyz` pings\n")
	p("Redis as the service's does).\n\n")
	p("| variant | idle RSS MiB | peak RSS MiB | ready ms |\n|---|---|---|---|\n")
	for _, v := range Variants {
		p("| %s | %s | %s | %s |\n", v, cell(r.Figure(v, IdleRSSOf), 1), cell(r.Figure(v, PeakRSSOf), 1), cell(r.Figure(v, ReadyOf), 1))
	}
	p("\n")

	p("## Allocations\n\n")
	p("The handler chain in-process on real Redis (`internal/perf`, BenchmarkChain), telemetry off, on (the chart's\n")
	p("sampling) and with every request sampled: `%s` (from the repository root; the harness\n", r.AllocsCommand)
	p("builds the test binary with `go test -c` before the rounds and runs it with the same flags after them).\n\n")
	if r.AllocsError != "" {
		p("Not measured: %s\n\n", r.AllocsError)
	} else {
		p("| benchmark | ns/op | B/op | allocs/op |\n|---|---|---|---|\n")
		for _, a := range r.Allocs {
			p("| %s | %s | %s | %s |\n", a.Name, num(a.NsPerOp, 0), num(a.BytesPerOp, 0), num(a.AllocsPerOp, 0))
		}
		p("\n")
	}

	p("## Every round\n\n")
	p("| round | variant | peak/s | CPU s/1k | p99 ms at %s | idle MiB | peak MiB | ready ms |\n|---|---|---|---|---|---|---|---|\n",
		strings.Join(fractionNames(r.Fractions), " / "))
	for i, rd := range r.Rounds {
		for _, v := range Variants {
			m := rd.Measures[v]
			if m == nil {
				continue
			}
			p99s := make([]string, len(m.Open))
			for j, l := range m.Open {
				p99s[j] = num(l.P99, 2)
			}
			p("| %d | %s | %s | %s | %s | %s | %s | %s |\n", i+1, v, num(m.Peak, 0), num(m.CPUPer1k, 4),
				strings.Join(p99s, " / "), num(m.IdleRSS, 1), num(m.PeakRSS, 1), num(m.ReadyMs, 1))
		}
	}
	p("\n")

	if r.HasRoutes() {
		p("| round | route | service/s | floor/s | ÷ floor |\n|---|---|---|---|---|\n")
		for i, rd := range r.Rounds {
			for _, route := range Routes {
				peak := RouteOf(route, RoutePeakOf)
				a, b := math.NaN(), math.NaN()
				if m := rd.Measures[Service]; m != nil {
					a = peak(m)
				}
				if m := rd.Measures[Floor]; m != nil {
					b = peak(m)
				}
				p("| %d | `%s` | %s | %s | %s |\n", i+1, route, num(a, 0), num(b, 0), num(a/b, 3))
			}
		}
		p("\n")
	}

	if r.HasSweep() {
		p("| round | connections | service/s | floor/s | ÷ floor | service peak MiB | floor peak MiB |\n|---|---|---|---|---|---|---|\n")
		for i, rd := range r.Rounds {
			for _, c := range r.ConcurrencyLevels() {
				peak, rss := r.CreatesAt(c, ConnsPeakOf), r.CreatesAt(c, ConnsRSSOf)
				a, b, ra, rb := math.NaN(), math.NaN(), math.NaN(), math.NaN()
				if m := rd.Measures[Service]; m != nil {
					a, ra = peak(m), rss(m)
				}
				if m := rd.Measures[Floor]; m != nil {
					b, rb = peak(m), rss(m)
				}
				p("| %d | %d | %s | %s | %s | %s | %s |\n", i+1, c, num(a, 0), num(b, 0), num(a/b, 3), num(ra, 1), num(rb, 1))
			}
		}
		p("\n")
	}

	p("## How it is measured\n\n")
	p("- `make bench` runs `go run ./cmd/bench` in `tools/bench`, a module of its own. It builds the service as the\n")
	p("  release does (`CGO_ENABLED=0 go build -trimpath -ldflags \"-s -w\"`) and the floor, starts `redis-server`\n")
	p("  (`--appendonly yes --appendfsync %s`; no password), an OTLP/HTTP sink per service variant, and the three\n", r.Appendfsync)
	p("  servers on free 127.0.0.1 ports, and stops them all at the end, on failure and on interrupt. Redis never\n")
	p("  forks during a phase: RDB snapshots and automatic AOF rewrites are off (`--save '' --auto-aof-rewrite-percentage\n")
	p("  0`), and between rounds the harness empties Redis and rewrites its AOF itself. With Redis's default rewrites\n")
	p("  three a round started mid-phase, each a fork and a child writing the whole data set for 0.6 to 1.9 s, and\n")
	p("  fell on whichever variant ran then. The Run table counts the forks during the rounds.\n")
	p("- The floor and the service make a pair in every phase that compares them (the closed loops, the 1.1.0\n")
	p("  routes): the floor goes first in odd rounds, the service in even ones, so that a drift of the machine\n")
	p("  within a pair does not always favour the same side. `-service-flags` appends flags to the service\n")
	p("  variants' command line: an A/B of a service option is two runs, each with its ratios to its own floor.\n")
	p("- The load generator is a minimal HTTP/1.1 client on raw keep-alive connections (it shares the CPUs with\n")
	p("  the server it measures). Requests: `POST /plants`, `Content-Type: application/json`, the service's bearer\n")
	p("  token, body `{\"id\": <unique>, \"name\": \"Monstera\", \"tag\": \"tropical\"}`. The 1.1.0 routes' requests are\n")
	p("  described in their section; every answer of every phase is checked.\n")
	p("- Percentiles are nearest-rank over every answered request of a phase.\n")
	p("- `make bench-short` (CI) is one round of one-second phases written to a temporary file; it fails when a\n")
	p("  phase produced no figure or a request failed (a status other than the route's, a wrong body, no answer),\n")
	p("  never on the targets.\n\n")

	p("## Changes and their effect\n\n")
	p("%s\n%s%s\n", ChangeBegin, Changes(previous), ChangeEnd)
	return b.Bytes()
}

func joinInts(xs []int) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprint(x)
	}
	return strings.Join(out, ", ")
}

func fractionNames(fs []float64) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = pct(f)
	}
	return out
}
