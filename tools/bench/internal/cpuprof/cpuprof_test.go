package cpuprof

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// sample is a stack (innermost first) and its nanoseconds.
type sample struct {
	stack []string
	ns    int64
}

// synthetic builds a CPU profile of samples.
func synthetic(samples []sample) *profile.Profile {
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		DurationNanos: 2e9,
	}
	funcs := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	for _, s := range samples {
		var ls []*profile.Location
		for _, name := range s.stack {
			loc := locs[name]
			if loc == nil {
				f := &profile.Function{ID: uint64(len(funcs) + 1), Name: name}
				funcs[name] = f
				p.Function = append(p.Function, f)
				loc = &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: f}}}
				locs[name] = loc
				p.Location = append(p.Location, loc)
			}
			ls = append(ls, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: ls, Value: []int64{1, s.ns}})
	}
	return p
}

func TestBreakdown(t *testing.T) {
	const ms = int64(1e6)
	p := synthetic([]sample{
		// 40 ms in go-redis's write, under the service's create handler.
		{[]string{"syscall.Syscall", "github.com/redis/go-redis/v9/internal/pool.(*Conn).Write", "github.com/plantstore/plantstore/internal/httpapi.(*Handler).create", "net/http.(*conn).serve"}, 40 * ms},
		// 30 ms allocating in a span.
		{[]string{"runtime.mallocgc", "go.opentelemetry.io/otel/sdk/trace.(*tracer).Start", "github.com/plantstore/plantstore/internal/telemetry.middleware", "net/http.(*conn).serve"}, 30 * ms},
		// 20 ms of GC, 10 ms elsewhere in the runtime, 10 ms copying
		// under encoding/json under the handler (the innermost component:
		// JSON).
		{[]string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, 20 * ms},
		{[]string{"runtime.memmove", "runtime.goexit"}, 10 * ms},
		{[]string{"runtime.memmove", "encoding/json.(*decodeState).literalStore", "github.com/plantstore/plantstore/internal/httpapi.(*Handler).create", "net/http.(*conn).serve"}, 10 * ms},
	})
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	b, err := Read(&buf, 3)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.Seconds-0.11) > 1e-9 || b.Duration != 2 {
		t.Errorf("seconds %v, duration %v; want 0.11, 2", b.Seconds, b.Duration)
	}
	want := map[string]Share{
		"plantstore's own code":                   {Flat: 0, Cum: 80. / 110},
		"Redis client (go-redis)":                 {Flat: 0, Cum: 40. / 110},
		"tracing (OpenTelemetry)":                 {Flat: 0, Cum: 30. / 110},
		"HTTP server (net/http)":                  {Flat: 0, Cum: 80. / 110},
		"JSON (encoding/json)":                    {Flat: 10. / 110, Cum: 10. / 110},
		"network I/O (syscalls, netpoll)":         {Flat: 40. / 110, Cum: 40. / 110},
		"garbage collector":                       {Flat: 20. / 110, Cum: 20. / 110},
		"memory allocation":                       {Flat: 30. / 110, Cum: 30. / 110},
		"logging (zap)":                           {},
		"other (no known component on the stack)": {Flat: 10. / 110},
	}
	var flat float64
	for _, c := range b.Components {
		flat += c.Flat
		if w, ok := want[c.Name]; ok && (math.Abs(c.Flat-w.Flat) > 1e-9 || math.Abs(c.Cum-w.Cum) > 1e-9) {
			t.Errorf("%s = flat %.3f cum %.3f, want %.3f %.3f", c.Name, c.Flat, c.Cum, w.Flat, w.Cum)
		}
	}
	if math.Abs(flat-1) > 1e-9 || len(b.Components) != len(Components)+1 {
		t.Errorf("flat shares add up to %v over %d components", flat, len(b.Components))
	}
	// runtime.memmove: 20 ms flat, from two stacks.
	if len(b.Top) != 3 || b.Top[0].Name != "syscall.Syscall" || b.Top[1].Name != "runtime.mallocgc" || b.Top[2].Name != "runtime.memmove" ||
		math.Abs(b.Top[2].Flat-20./110) > 1e-9 || math.Abs(b.Top[2].Cum-20./110) > 1e-9 {
		t.Errorf("top = %+v", b.Top)
	}
}

func TestReadFailures(t *testing.T) {
	if _, err := Read(strings.NewReader("not a profile"), 5); err == nil {
		t.Error("Read of garbage: no error")
	}
	heap := &profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}
	if _, err := Summarise(heap, 5); err == nil || !strings.Contains(err.Error(), "cpu/nanoseconds") {
		t.Errorf("a heap profile: %v", err)
	}
	empty := synthetic(nil)
	if _, err := Summarise(empty, 5); err == nil || !strings.Contains(err.Error(), "no sample") {
		t.Errorf("an empty profile: %v", err)
	}
}
