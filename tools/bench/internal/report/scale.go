package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/plantstore/plantstore/tools/bench/internal/stats"
)

// The markers of the sizing block in docs/performance.md, written by the
// harness's -scale run (make bench-scale) as the figures block is by
// make bench-load.
const (
	SizingBegin = "<!-- sizing:begin: written by tools/bench -scale (make bench-scale, or -render -scale from performance-scale.json); edit outside the markers only -->"
	SizingEnd   = "<!-- sizing:end -->"
)

// The operations a -scale run measures at every size, in the table's order.
const (
	OpGet      = "GET /plants/{id}"
	OpListHead = "GET /plants?limit=20, first page"
	OpListDeep = "GET /plants?limit=20, a page in the middle of the ids"
	OpCreate   = "POST /plants"
	OpDelete   = "DELETE /plants/{id}"
)

// ScaleOps are the operations in the table's order.
var ScaleOps = []string{OpGet, OpListHead, OpListDeep, OpCreate, OpDelete}

// The forks a -scale run starts at every size under a steady rate of creates.
const (
	ForkRewrite  = "AOF rewrite (BGREWRITEAOF)"
	ForkSnapshot = "RDB snapshot (BGSAVE)"
)

// ScaleRun is one run of the harness's -scale mode: the store's cost by the
// number of plants it holds, every figure of a size beside the base size's
// (Sizes[0]) of the same run. A later size's operations are measured in
// Rounds paired phases, each beside one on a second store of the base size,
// and their ratios are the medians of the rounds' (ScaleSize.Pairs).
type ScaleRun struct {
	Date        time.Time
	Command     string
	Machine     Machine
	Short       bool
	Elapsed     time.Duration
	Appendfsync string
	Conns       []int
	Warmup      time.Duration
	Window      time.Duration
	Rounds      int `json:",omitempty"`
	// ForkRate is the creates a second sent while Redis forks.
	ForkRate float64
	// PlantBytes and KeyBytes: the JSON value of the plant the fill stores
	// and the key of one plant (the fill's ids all have the same length).
	PlantBytes, KeyBytes int
	Sizes                []ScaleSize
	Migration            *MigrationMeasure `json:",omitempty"`
	Outbox               *OutboxMeasure    `json:",omitempty"`
	Failures             []string
	// Errors are failed requests outside the forks; a full run reports
	// them, -short fails on them.
	Errors []string
	// PNG is the chart's file name, beside the report.
	PNG string
}

// ScaleSize is what one size measured.
type ScaleSize struct {
	Plants int64 // stored when the size's phases started
	// Ops are the size's figures: at a later size, each the median of its
	// rounds in Pairs.
	Ops []OpMeasure
	// Pairs are a later size's rounds, each phase beside one of the same
	// operation on a second store of the base size, run just before or
	// after it: what the machine did in the meantime falls on both.
	Pairs []Pair `json:",omitempty"`
	// Redis's INFO memory when the size's phases started (the fill done),
	// and of an empty Redis: the plants' own share is the difference.
	UsedMemory, UsedMemoryRSS, EmptyUsedMemory int64
	// KeyUsage is MEMORY USAGE of one plant's key; IndexEntry the listing
	// indexes' MEMORY USAGE over their members.
	KeyUsage   int64
	IndexEntry float64
	AOFBytes   int64 // after the size's rewrite
	ReadyMs    float64
	// BaseP99Ms is the creates' p99 at ForkRate with no fork, before the forks.
	BaseP99Ms float64
	Forks     []ForkMeasure
	// Redis's latency monitor over the size's phases (LATENCY LATEST,
	// events over 100 ms): the longest O(1) command ("fast-command") and
	// other command. A GET or SET that takes 100 ms is Redis not getting
	// the CPU, not the store's cost.
	LongestFastMs, LongestCommandMs int64
	// UsecPerCall is Redis's own time a call of each command the
	// operations send (INFO commandstats over the size's phases): what the
	// store's work costs Redis at the size, whatever the machine did.
	UsecPerCall map[string]float64 `json:",omitempty"`
}

// CallCommands are the commands of UsecPerCall, in the table's order: the
// create and delete scripts, a read, a page's two round trips.
var CallCommands = []string{"evalsha", "get", "zrange", "mget"}

// OpMeasure is one operation's closed loop at one number of connections.
type OpMeasure struct {
	Op       string
	Conns    int
	Rate     float64 // answers a second
	P50, P99 float64 // ms
	Failed   int64
	Error    string `json:",omitempty"`
}

// ForkMeasure is one BGREWRITEAOF or BGSAVE under ForkRate creates a second.
type ForkMeasure struct {
	Kind       string
	Ms         float64 // from the command to the end of the child, as polled
	ForkUsec   int64   // INFO latest_fork_usec
	COWBytes   int64   // INFO aof_last_cow_size or rdb_last_cow_size
	P99Ms      float64 // the creates' p99 while it ran
	Requests   int64
	Failed     int64
	Status     string // INFO aof_last_bgrewrite_status or rdb_last_bgsave_status
	FirstError string `json:",omitempty"`
}

// MigrationMeasure is `plantstore migrate-store` over 1.0.0 plants.
type MigrationMeasure struct {
	Plants  int64
	Seconds float64
	Output  string
}

// OutboxMeasure is a webhook subscriber down under creates, then back.
type OutboxMeasure struct {
	Outage      time.Duration
	Rate        float64
	Plants      int64 // stored when it started
	Created     int64 // creates answered 200 during the outage
	Failed      int64 // creates that failed
	MaxBacklog  int64 // events and deliveries waiting, the most seen
	MemoryBytes int64 // used_memory at the end of the outage less at the end of the drain
	DrainSec    float64
	Delivered   int64 // distinct plant.created events the subscriber took during the drain
	Received    int64 // distinct plant.created events of the outage's creates received in all
	// Pending are the events and deliveries still in the outbox at the end
	// (the drain is bounded); Lost, the events neither received nor pending.
	Pending     int64
	Lost        int64
	DeadLetters int64
	Drained     bool
}

// Pair is one round of an operation at a size: its phase on the size's
// store and the phase beside it on the base size's.
type Pair struct {
	Size, Base OpMeasure
}

// ratio is a size's figure over the base size's: the median of the rounds'
// ratios to the phases beside them, or without rounds (a run before they
// were paired) to the base size's own figure.
func (r *ScaleRun) ratio(size int, op string, conns int, f func(OpMeasure) float64) float64 {
	var sized, based []float64
	for _, p := range r.Sizes[size].Pairs {
		if p.Size.Op == op && p.Size.Conns == conns {
			sized, based = append(sized, f(p.Size)), append(based, f(p.Base))
		}
	}
	if len(sized) > 0 {
		return stats.Summary(stats.Ratios(sized, based)).Median
	}
	a, okA := r.Sizes[size].op(op, conns)
	b, okB := r.Sizes[0].op(op, conns)
	if !okA || !okB || f(b) <= 0 {
		return math.NaN()
	}
	return f(a) / f(b)
}

func (s ScaleSize) op(name string, conns int) (OpMeasure, bool) {
	for _, m := range s.Ops {
		if m.Op == name && m.Conns == conns {
			return m, true
		}
	}
	return OpMeasure{}, false
}

// PerPlant is Redis's used_memory per plant at the size, the empty
// server's own taken off.
func (s ScaleSize) PerPlant() float64 {
	if s.Plants <= 0 {
		return math.NaN()
	}
	return float64(s.UsedMemory-s.EmptyUsedMemory) / float64(s.Plants)
}

// Headroom is what a memory limit must hold above used_memory at the size:
// the allocator's overhead (RSS over used_memory) and the fork's
// copy-on-write pages, the larger of the rewrite's and the snapshot's.
func (s ScaleSize) Headroom() int64 {
	var cow int64
	for _, f := range s.Forks {
		cow = max(cow, f.COWBytes)
	}
	return max(0, s.UsedMemoryRSS-s.UsedMemory) + cow
}

// Incomplete lists the figures the run lacks and the failures it counted:
// an operation without a rate, a fork that failed, an event lost.
func (r *ScaleRun) Incomplete() []string {
	var out []string
	if len(r.Sizes) < 2 {
		out = append(out, fmt.Sprintf("%d sizes measured, want the base and at least one more", len(r.Sizes)))
	}
	for _, s := range r.Sizes {
		for _, m := range s.Ops {
			if !(m.Rate > 0) || !(m.P99 > 0) {
				out = append(out, fmt.Sprintf("%d plants: %s at %d connections: no figure", s.Plants, m.Op, m.Conns))
			}
		}
		if len(s.Ops) != len(ScaleOps)*len(r.Conns) {
			out = append(out, fmt.Sprintf("%d plants: %d operation figures, want %d", s.Plants, len(s.Ops), len(ScaleOps)*len(r.Conns)))
		}
		for _, f := range s.Forks {
			if f.Failed > 0 || f.Status != "ok" || f.Requests == 0 {
				out = append(out, fmt.Sprintf("%d plants: %s: status %q, %d of %d creates failed %s", s.Plants, f.Kind, f.Status, f.Failed, f.Requests, f.FirstError))
			}
		}
	}
	if m := r.Migration; m != nil && !(m.Seconds > 0) {
		out = append(out, "the migration has no time")
	}
	if o := r.Outbox; o != nil && (o.Lost != 0 || o.Created == 0 || o.DeadLetters != 0) {
		out = append(out, fmt.Sprintf("outbox: %d created, %d events lost, %d dead letters", o.Created, o.Lost, o.DeadLetters))
	}
	return out
}

// FailedRequests lists the phases with failed requests: the operations'
// and the outage's creates (the forks' are a goal).
func (r *ScaleRun) FailedRequests() []string {
	var out []string
	for _, s := range r.Sizes {
		ops := s.Ops
		for _, p := range s.Pairs {
			ops = append(ops, p.Base)
		}
		for _, m := range ops {
			if m.Failed > 0 {
				out = append(out, fmt.Sprintf("%d plants: %s at %d connections: %d requests failed: %.200s", s.Plants, m.Op, m.Conns, m.Failed, m.Error))
			}
		}
	}
	if o := r.Outbox; o != nil && o.Failed > 0 {
		out = append(out, fmt.Sprintf("outbox: %d of %d creates during the outage failed", o.Failed, o.Created+o.Failed))
	}
	return out
}

// Judge sets the run's verdicts from its figures: the failures (with
// short, the failed requests too) and the failed requests a full run
// reports. extra are failures that are not figures (a chart that failed).
func (r *ScaleRun) Judge(extra ...string) {
	r.Failures = append(extra, r.Incomplete()...)
	r.Errors = nil
	if r.Short {
		r.Failures = append(r.Failures, r.FailedRequests()...)
	} else {
		r.Errors = r.FailedRequests()
	}
}

// Goal is one of issue 55's goals, at the largest size.
type Goal struct {
	Name     string
	Measured string
	Pass     bool
}

// Goals checks issue 55's goals at the run's largest size.
func (r *ScaleRun) Goals() []Goal {
	if len(r.Sizes) < 2 {
		return nil
	}
	last := len(r.Sizes) - 1
	var worstP99, worstRate float64 = 0, math.Inf(1)
	var p99At, rateAt string
	for _, op := range ScaleOps {
		for _, c := range r.Conns {
			if v := r.ratio(last, op, c, func(m OpMeasure) float64 { return m.P99 }); v > worstP99 {
				worstP99, p99At = v, fmt.Sprintf("%s, %d conns", op, c)
			}
			if v := r.ratio(last, op, c, func(m OpMeasure) float64 { return m.Rate }); v < worstRate {
				worstRate, rateAt = v, fmt.Sprintf("%s, %d conns", op, c)
			}
		}
	}
	s := r.Sizes[last]
	own := float64(r.PlantBytes + r.KeyBytes)
	var forkFailed int64
	for _, sz := range r.Sizes {
		for _, f := range sz.Forks {
			forkFailed += f.Failed
		}
	}
	n := plantsLabel(s.Plants)
	return []Goal{
		{fmt.Sprintf("every p99 at %s ≤ 1.2 × the base size's", n), fmt.Sprintf("worst %s × (%s)", num(worstP99, 2), p99At), worstP99 <= 1.2},
		{fmt.Sprintf("every throughput at %s ≥ 0.9 × the base size's", n), fmt.Sprintf("worst %s × (%s)", num(worstRate, 2), rateAt), worstRate >= 0.9},
		{fmt.Sprintf("used_memory per plant ≤ 2 × (plant %d B + key %d B) = %.0f B", r.PlantBytes, r.KeyBytes, 2*own),
			fmt.Sprintf("%.0f B (%s × plant + key)", s.PerPlant(), num(s.PerPlant()/own, 2)), s.PerPlant() <= 2*own},
		{"0 failed creates during rewrites and snapshots", fmt.Sprint(forkFailed), forkFailed == 0},
	}
}

// plantsLabel spells a plant count short: 10k, 1M, 2.5M.
func plantsLabel(n int64) string {
	switch {
	case n >= 1e6:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", float64(n)/1e6), "0"), ".") + "M"
	case n >= 1e3:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", float64(n)/1e3), "0"), ".") + "k"
	}
	return fmt.Sprint(n)
}

func mib(b int64) string { return num(float64(b)/(1<<20), 1) }

// Sizing renders the run as the content of docs/performance.md's sizing
// block: what ran, the goals, one table with a column per size, the
// migration and the outbox.
func Sizing(r *ScaleRun) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	if r.Short {
		p("> **Short run (`-short`)**: a small store and short phases, made to check that the harness works, not to\n> size anything.\n\n")
	}
	p("- run: %s, `%s`, %s\n", r.Date.UTC().Format(time.RFC3339), r.Command, r.Elapsed.Round(time.Second))
	p("%s", machineLine(r.Machine, r.Appendfsync))
	p("- phases: each operation a closed loop at %s connections, %s after a %s warm-up", joinInts(r.Conns), r.Window, r.Warmup)
	if r.Rounds > 0 {
		p(", at every size after the base in %d rounds, each beside a phase on a second store of the base size", r.Rounds)
	}
	p("; the forks under %.0f creates/s (open loop); every plant `%d` bytes of JSON under a key of %d bytes\n", r.ForkRate, r.PlantBytes, r.KeyBytes)
	for _, f := range r.Failures {
		p("- **failure**: %s\n", f)
	}
	for _, e := range r.Errors {
		p("- failed requests: %s\n", e)
	}
	p("\n")
	if goals := r.Goals(); len(goals) > 0 {
		p("| goal (issue 55) | measured | verdict |\n|---|---|---|\n")
		for _, g := range goals {
			p("| %s | %s | %s |\n", g.Name, g.Measured, Verdict(g.Pass))
		}
		p("\n")
	}
	if r.Rounds > 0 {
		p("Operations: throughput / p50 / p99 as ratios to the base size's, the median of the rounds' ratios to the phases\n")
		p("beside them (the base column: req/s, ms, ms, measured alone before the fill). Memory: Redis's\n")
	} else {
		p("Operations: throughput / p50 / p99 as ratios to the base size's (its column: req/s, ms, ms). Memory: Redis's\n")
	}
	p("INFO when the size's phases started; the headroom is RSS over used_memory plus the larger fork's copy-on-write.\n\n")
	row := func(name string, cell func(i int, s ScaleSize) string) {
		p("| %s |", name)
		for i, s := range r.Sizes {
			p(" %s |", cell(i, s))
		}
		p("\n")
	}
	row("plants", func(_ int, s ScaleSize) string { return plantsLabel(s.Plants) })
	p("|---|%s\n", strings.Repeat("---|", len(r.Sizes)))
	for _, op := range ScaleOps {
		for _, c := range r.Conns {
			row(fmt.Sprintf("`%s`, %d conns", op, c), func(i int, s ScaleSize) string {
				m, ok := s.op(op, c)
				switch {
				case !ok:
					return "–"
				case i == 0:
					return fmt.Sprintf("%s / %s / %s", num(m.Rate, 0), num(m.P50, 2), num(m.P99, 2))
				}
				return fmt.Sprintf("%s / %s / %s", num(r.ratio(i, op, c, func(m OpMeasure) float64 { return m.Rate }), 2),
					num(r.ratio(i, op, c, func(m OpMeasure) float64 { return m.P50 }), 2), num(r.ratio(i, op, c, func(m OpMeasure) float64 { return m.P99 }), 2))
			})
		}
	}
	own := float64(r.PlantBytes + r.KeyBytes)
	row("failed requests of these phases", func(_ int, s ScaleSize) string {
		var n int64
		for _, m := range s.Ops {
			n += m.Failed
		}
		return fmt.Sprint(n)
	})
	row("Redis's longest fast command / other command, ms", func(_ int, s ScaleSize) string {
		return fmt.Sprintf("%d / %d", s.LongestFastMs, s.LongestCommandMs)
	})
	if len(r.Sizes[0].UsecPerCall) > 0 {
		row("Redis µs a call: "+strings.ToUpper(strings.Join(CallCommands, " / ")), func(_ int, s ScaleSize) string {
			var cells []string
			for _, c := range CallCommands {
				cells = append(cells, num(s.UsecPerCall[c], 2))
			}
			return strings.Join(cells, " / ")
		})
	}
	row("used_memory per plant, B (÷ plant + key)", func(_ int, s ScaleSize) string {
		return fmt.Sprintf("%s (%s)", num(s.PerPlant(), 0), num(s.PerPlant()/own, 2))
	})
	row("of which: one plant's key, B; one index entry, B", func(_ int, s ScaleSize) string {
		return fmt.Sprintf("%d; %s", s.KeyUsage, num(s.IndexEntry, 0))
	})
	row("used_memory / RSS, MiB", func(_ int, s ScaleSize) string { return mib(s.UsedMemory) + " / " + mib(s.UsedMemoryRSS) })
	row("headroom above used_memory, MiB", func(_ int, s ScaleSize) string { return mib(s.Headroom()) })
	row("AOF after the rewrite, MiB", func(_ int, s ScaleSize) string { return mib(s.AOFBytes) })
	row("service start to ready, ms", func(_ int, s ScaleSize) string { return num(s.ReadyMs, 1) })
	row(fmt.Sprintf("creates' p99 at %.0f/s without a fork, ms", r.ForkRate), func(_ int, s ScaleSize) string { return num(s.BaseP99Ms, 2) })
	for _, kind := range []string{ForkRewrite, ForkSnapshot} {
		row(kind+": s; fork ms; COW MiB; creates' p99 ms; failed", func(_ int, s ScaleSize) string {
			for _, f := range s.Forks {
				if f.Kind == kind {
					return fmt.Sprintf("%s; %s; %s; %s; %d of %d", num(f.Ms/1000, 2), num(float64(f.ForkUsec)/1000, 1), mib(f.COWBytes), num(f.P99Ms, 2), f.Failed, f.Requests)
				}
			}
			return "–"
		})
	}
	p("\n")
	if r.PNG != "" {
		p("![p99 of each operation at %d connections, and Redis's used_memory, RSS, the memory limit each size needs and the AOF, against the plants stored](%s)\n\n", r.Conns[len(r.Conns)-1], r.PNG)
	}
	if m := r.Migration; m != nil {
		p("Migration (`plantstore migrate-store`, one pass) of %s 1.0.0 plants: %s s, %s plants/s; it said: `%s`\n\n",
			plantsLabel(m.Plants), num(m.Seconds, 1), num(float64(m.Plants)/m.Seconds, 0), m.Output)
	}
	if o := r.Outbox; o != nil {
		p("Webhook subscriber down for %s (answering 503) under %.0f creates/s, on a store of %s plants: %d events recorded, the backlog\n",
			o.Outage, o.Rate, plantsLabel(o.Plants), o.Created)
		perEvent := float64(o.MemoryBytes) / math.Max(1, float64(o.Delivered))
		p("at most %d events and deliveries. Back, the subscriber took %d events in\n", o.MaxBacklog, o.Delivered)
		drained := fmt.Sprintf("the outbox empty after %s s", num(o.DrainSec, 1))
		if !o.Drained {
			drained = fmt.Sprintf("not drained when the harness stopped waiting, %d still in the outbox", o.Pending)
		}
		p("%s s (%s events/s); %s; %d events lost (neither received nor in the outbox), %d dead letters; %d creates failed.\n",
			num(o.DrainSec, 1), num(float64(o.Delivered)/math.Max(o.DrainSec, 1e-9), 0), drained, o.Lost, o.DeadLetters, o.Failed)
		p("The drain freed %s MiB of Redis memory: %s B an event, so the largest backlog held about %s MiB.\n",
			mib(o.MemoryBytes), num(perEvent, 0), mib(int64(perEvent*float64(o.MaxBacklog))))
	}
	return b.Bytes()
}

// opColors are the operations' lines in ScaleChart.
var opColors = map[string]color.Color{
	OpGet:      color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	OpListHead: color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	OpListDeep: color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	OpCreate:   color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	OpDelete:   color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// ScaleChart draws, against the number of plants (log scale), each
// operation's p99 at the run's most connections, and beside it Redis's
// used_memory, RSS, the memory limit the size needs (RSS plus the fork's
// copy-on-write) and the AOF, into a PNG at path.
func ScaleChart(r *ScaleRun, path string) error {
	if len(r.Sizes) == 0 || len(r.Conns) == 0 {
		return fmt.Errorf("chart: no size measured")
	}
	conns := r.Conns[len(r.Conns)-1]
	lat := newPlot(fmt.Sprintf("p99 by plants stored (closed loop, %d connections)", conns), "plants (log scale)", "p99, ms")
	mem := newPlot("Redis memory and AOF by plants stored", "plants (log scale)", "MiB")
	ticks := make([]plot.Tick, len(r.Sizes))
	for i, s := range r.Sizes {
		ticks[i] = plot.Tick{Value: float64(s.Plants), Label: plantsLabel(s.Plants)}
	}
	for _, pl := range []*plot.Plot{lat, mem} {
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	bySize := func(pl *plot.Plot, name string, c color.Color, dash []vg.Length, y func(ScaleSize) (float64, bool)) error {
		var xys plotter.XYs
		for _, s := range r.Sizes {
			if v, ok := y(s); ok && s.Plants > 0 && !math.IsNaN(v) {
				xys = append(xys, plotter.XY{X: float64(s.Plants), Y: v})
			}
		}
		if len(xys) == 0 {
			return nil
		}
		return addLine(pl, name, c, dash, xys)
	}
	for _, op := range ScaleOps {
		if err := bySize(lat, op, opColors[op], nil, func(s ScaleSize) (float64, bool) {
			m, ok := s.op(op, conns)
			return m.P99, ok
		}); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		name string
		c    color.Color
		dash []vg.Length
		y    func(ScaleSize) int64
	}{
		{"used_memory", opColors[OpGet], nil, func(s ScaleSize) int64 { return s.UsedMemory }},
		{"RSS", opColors[OpListHead], nil, func(s ScaleSize) int64 { return s.UsedMemoryRSS }},
		{"limit needed: used_memory + headroom", opColors[OpDelete], dashed, func(s ScaleSize) int64 { return s.UsedMemory + s.Headroom() }},
		{"AOF after a rewrite", opColors[OpCreate], nil, func(s ScaleSize) int64 { return s.AOFBytes }},
	} {
		if err := bySize(mem, l.name, l.c, l.dash, func(s ScaleSize) (float64, bool) { return float64(l.y(s)) / (1 << 20), true }); err != nil {
			return err
		}
	}
	for _, pl := range []*plot.Plot{lat, mem} {
		pl.Y.Min = 0
		pl.Y.Max *= 1.35
		pl.X.Min = float64(r.Sizes[0].Plants) / 1.5
		pl.X.Max = float64(r.Sizes[len(r.Sizes)-1].Plants) * 1.5
	}
	return writeRow(path, []*plot.Plot{lat, mem}, 15*vg.Inch)
}
