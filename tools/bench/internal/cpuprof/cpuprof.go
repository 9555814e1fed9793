// Package cpuprof summarises a Go CPU profile (pprof format) for the
// report: the share of the samples in each component of the service
// (its own code, the Redis client, tracing, metrics, logging, net/http, the
// garbage collector, ...) and its hottest functions.
package cpuprof

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// Component is a part of the program, known by the prefixes of its
// functions' names.
type Component struct {
	Name     string
	Prefixes []string
}

// Components are the service's parts the breakdown shows, in table order.
// A function belongs to the first component with one of its prefixes.
var Components = []Component{
	{"plantstore's own code", []string{"github.com/plantstore/plantstore/"}},
	{"Redis client (go-redis)", []string{"github.com/redis/go-redis/"}},
	{"tracing (OpenTelemetry)", []string{"go.opentelemetry.io/"}},
	{"metrics (Prometheus client)", []string{"github.com/prometheus/"}},
	{"logging (zap)", []string{"go.uber.org/zap"}},
	{"HTTP server (net/http)", []string{"net/http.", "net/textproto.", "net/url."}},
	{"JSON (encoding/json)", []string{"encoding/json."}},
	{"network I/O (syscalls, netpoll)", []string{"syscall.", "internal/runtime/syscall", "internal/poll.", "net.", "runtime.netpoll"}},
	{"garbage collector", []string{"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.gcDrain", "runtime.bgsweep", "runtime.bgscavenge", "runtime.markroot", "runtime.scanobject", "runtime.sweepone", "runtime.gcStart"}},
	{"memory allocation", []string{"runtime.mallocgc", "runtime.newobject", "runtime.makeslice", "runtime.growslice", "runtime.newstack", "runtime.(*mcache)", "runtime.(*mheap)", "runtime.(*mcentral)"}},
	{"goroutine scheduling", []string{"runtime.schedule", "runtime.findRunnable", "runtime.park_m", "runtime.goexit0", "runtime.mcall", "runtime.ready", "runtime.wakep", "runtime.notewakeup", "runtime.futex"}},
}

// Share is a component's or a function's share of the samples, 0 to 1.
// Flat counts the samples whose innermost function is the function, or,
// for a component, whose innermost function of any component belongs to it
// (a runtime.memmove under encoding/json counts for JSON): the components'
// flat shares add up to 1 with "other", the stacks with no known component.
// Cum counts the samples whose stack passes through it anywhere (they
// overlap: a Redis call under the service's handler counts in both).
type Share struct {
	Name      string
	Flat, Cum float64
}

// Breakdown is the summary of one CPU profile.
type Breakdown struct {
	Seconds    float64 // CPU time sampled
	Duration   float64 // wall time profiled, seconds
	Components []Share // Components, in order, then "other" (flat only)
	Top        []Share // the top functions by flat share, descending
}

// Read parses a CPU profile and summarises it: components and the top
// functions by flat share.
func Read(r io.Reader, top int) (Breakdown, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return Breakdown{}, fmt.Errorf("cpu profile: %w", err)
	}
	return Summarise(p, top)
}

// Summarise summarises a parsed CPU profile.
func Summarise(p *profile.Profile, top int) (Breakdown, error) {
	idx := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" && t.Unit == "nanoseconds" })
	if idx < 0 {
		return Breakdown{}, fmt.Errorf("cpu profile: no cpu/nanoseconds sample type")
	}
	var total int64
	compFlat := make([]int64, len(Components)+1) // the last: other
	compCum := make([]int64, len(Components))
	funcFlat, funcCum := map[string]int64{}, map[string]int64{}
	for _, s := range p.Sample {
		v := s.Value[idx]
		if v <= 0 {
			continue
		}
		total += v
		names := stack(s)
		if len(names) == 0 {
			compFlat[len(Components)] += v
			continue
		}
		funcFlat[names[0]] += v
		innermost := len(Components)
		seenComp := make([]bool, len(Components))
		seenFunc := map[string]bool{}
		for _, n := range names {
			if !seenFunc[n] {
				seenFunc[n] = true
				funcCum[n] += v
			}
			if c := component(n); c < len(Components) && !seenComp[c] {
				seenComp[c] = true
				compCum[c] += v
				if innermost == len(Components) {
					innermost = c
				}
			}
		}
		compFlat[innermost] += v
	}
	if total == 0 {
		return Breakdown{}, fmt.Errorf("cpu profile: no sample")
	}
	frac := func(v int64) float64 { return float64(v) / float64(total) }
	b := Breakdown{Seconds: float64(total) / 1e9, Duration: float64(p.DurationNanos) / 1e9}
	for i, c := range Components {
		b.Components = append(b.Components, Share{Name: c.Name, Flat: frac(compFlat[i]), Cum: frac(compCum[i])})
	}
	b.Components = append(b.Components, Share{Name: "other (no known component on the stack)", Flat: frac(compFlat[len(Components)])})
	for name, v := range funcFlat {
		b.Top = append(b.Top, Share{Name: name, Flat: frac(v), Cum: frac(funcCum[name])})
	}
	slices.SortFunc(b.Top, func(x, y Share) int { return cmp.Or(cmp.Compare(y.Flat, x.Flat), strings.Compare(x.Name, y.Name)) })
	b.Top = b.Top[:min(top, len(b.Top))]
	return b, nil
}

// stack is a sample's function names, innermost first (inlined frames
// included).
func stack(s *profile.Sample) []string {
	var out []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil {
				out = append(out, l.Function.Name)
			}
		}
	}
	return out
}

// component is the index in Components of the component fn belongs to, or
// len(Components) for none.
func component(fn string) int {
	for i, c := range Components {
		for _, pre := range c.Prefixes {
			if strings.HasPrefix(fn, pre) {
				return i
			}
		}
	}
	return len(Components)
}
