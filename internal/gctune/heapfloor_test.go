package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

const mib = 1 << 20

func TestFloorPercent(t *testing.T) {
	tests := []struct {
		name              string
		floor, live, root uint64
		base, want        int
	}{
		{name: "live heap above the floor: GOGC", floor: 12 * mib, live: 13 * mib, root: mib, base: 100, want: 100},
		{name: "live heap at the floor: GOGC", floor: 12 * mib, live: 12 * mib, base: 100, want: 100},
		{name: "twice the live heap above the floor: GOGC", floor: 12 * mib, live: 6 * mib, base: 100, want: 100},
		{name: "goal at the floor", floor: 12 * mib, live: 5 * mib, root: mib, base: 100, want: 117},
		{name: "small heap: the runtime's minimum scaled to the floor", floor: 12 * mib, live: 2 * mib, root: mib / 2, base: 100, want: 300},
		{name: "nothing marked yet", floor: 12 * mib, base: 100, want: 300},
		{name: "a higher GOGC wins", floor: 12 * mib, live: 5 * mib, root: mib, base: 200, want: 200},
		{name: "a floor under the runtime's minimum never lowers GOGC", floor: 2 * mib, live: mib, base: 100, want: 100},
		{name: "a larger floor", floor: 64 * mib, live: 8 * mib, root: mib, base: 100, want: 623},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := floorPercent(tt.floor, tt.base, tt.live, tt.root)
			if got != tt.want {
				t.Fatalf("floorPercent(floor %d, base %d, live %d, roots %d) = %d, want %d", tt.floor, tt.base, tt.live, tt.root, got, tt.want)
			}
			if got == tt.base {
				return
			}
			// The runtime's goal for the percentage (runtime/mgcpacer.go):
			// at the floor, rounding aside, and never below it.
			goal := max(tt.live+(tt.live+tt.root)*uint64(got)/100, runtimeHeapMinimum*uint64(got)/100)
			if goal < tt.floor || goal > tt.floor+tt.floor/100 {
				t.Fatalf("percentage %d makes a goal of %d bytes, want the floor, %d", got, goal, tt.floor)
			}
		})
	}
}

// readUint64 reads one runtime/metrics value.
func readUint64(t *testing.T, name string) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatalf("runtime/metrics %s: kind %v", name, s[0].Value.Kind())
	}
	return s[0].Value.Uint64()
}

// collectUntil runs collections until h has paced n of them, or fails.
func collectUntil(t *testing.T, h *HeapFloor, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		h.mu.Lock()
		cycles := h.cycles
		h.mu.Unlock()
		if cycles >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d collections paced after 10s of runtime.GC, want %d", cycles, n)
		}
		time.Sleep(time.Millisecond) // let the cleanup goroutine run
	}
}

// The runtime's own heap goal, read back, is the floor while the floor is
// paced, and GOGC's again after Stop.
func TestHeapFloorSetsTheRuntimesGoal(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const floor = 64 * mib // well above this test binary's live heap
	h := NewHeapFloor(floor)
	if !h.Start() {
		t.Fatal("Start = false with a floor and GOGC on")
	}
	collectUntil(t, h, 2)
	goal := readUint64(t, "/gc/heap/goal:bytes")
	if goal < floor || goal > floor+floor/50 {
		t.Errorf("heap goal %d bytes with a floor of %d, want the floor", goal, floor)
	}
	if p := readUint64(t, metricPercent); int(p) != h.Percent() || p <= 100 {
		t.Errorf("GOGC in force %d, HeapFloor says %d: want its own, above 100", p, h.Percent())
	}

	// Collections go on pacing: a larger live heap lowers the percentage.
	keep := make([][]byte, 0, 24)
	for range 24 {
		keep = append(keep, make([]byte, mib))
	}
	before := h.Percent()
	h.mu.Lock()
	n := h.cycles
	h.mu.Unlock()
	collectUntil(t, h, n+2)
	if after := h.Percent(); after >= before {
		t.Errorf("percentage %d with 24 MiB more live, %d before: want lower", after, before)
	}
	if goal := readUint64(t, "/gc/heap/goal:bytes"); goal < floor || goal > floor+floor/50 {
		t.Errorf("heap goal %d bytes with 24 MiB more live, want the floor %d", goal, floor)
	}
	runtime.KeepAlive(keep)

	h.Stop()
	if p := readUint64(t, metricPercent); p != 100 {
		t.Errorf("GOGC %d after Stop, want 100 back", p)
	}
	runtime.GC()
	if goal := readUint64(t, "/gc/heap/goal:bytes"); goal >= floor {
		t.Errorf("heap goal %d bytes after Stop, want GOGC's, below the floor %d", goal, floor)
	}
	h.Stop() // a second Stop changes nothing
	if p := readUint64(t, metricPercent); p != 100 {
		t.Errorf("GOGC %d after a second Stop, want 100", p)
	}
}

func TestHeapFloorLeavesThePaceAlone(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	t.Run("no floor", func(t *testing.T) {
		h := NewHeapFloor(0)
		if h.Start() {
			t.Fatal("Start = true with a floor of 0")
		}
		runtime.GC()
		if p := readUint64(t, metricPercent); p != 100 {
			t.Fatalf("GOGC %d, want 100 untouched", p)
		}
	})
	t.Run("GOGC off", func(t *testing.T) {
		debug.SetGCPercent(-1)
		defer debug.SetGCPercent(100)
		h := NewHeapFloor(64 * mib)
		if h.Start() {
			t.Fatal("Start = true with GOGC off")
		}
		if p := currentPercent(); p != -1 {
			t.Fatalf("GC percentage %d, want collection still off (-1)", p)
		}
	})
	t.Run("started once", func(t *testing.T) {
		h := NewHeapFloor(64 * mib)
		if !h.Start() {
			t.Fatal("first Start = false")
		}
		defer h.Stop()
		if h.Start() {
			t.Fatal("second Start = true, want false: it is running")
		}
	})
	t.Run("one at a time", func(t *testing.T) {
		first, second := NewHeapFloor(64*mib), NewHeapFloor(32*mib)
		if !first.Start() {
			t.Fatal("first HeapFloor's Start = false")
		}
		if second.Start() {
			first.Stop()
			t.Fatal("second HeapFloor's Start = true while the first paces the process")
		}
		second.Stop() // not running: must not release the first's hold
		if third := NewHeapFloor(16 * mib); third.Start() {
			t.Fatal("a third HeapFloor started after the second's Stop")
		}
		first.Stop()
		if !second.Start() {
			t.Fatal("second HeapFloor's Start = false after the first stopped")
		}
		second.Stop()
	})
	t.Run("GOGC above 100 is the percentage above the floor", func(t *testing.T) {
		debug.SetGCPercent(5000)
		defer debug.SetGCPercent(100)
		h := NewHeapFloor(12 * mib)
		if !h.Start() {
			t.Fatal("Start = false")
		}
		collectUntil(t, h, 1)
		if p := h.Percent(); p != 5000 {
			t.Fatalf("percentage %d, want GOGC's 5000: its goal is above the floor", p)
		}
		h.Stop()
		if p := currentPercent(); p != 5000 {
			t.Fatalf("GC percentage %d after Stop, want 5000 back", p)
		}
	})
}

// A HeapFloor stopped and started again before its next collection paces
// each collection once: the cleanup armed before Stop must not go on as a
// second chain beside the one the new Start arms.
func TestHeapFloorRestartPacesEachCycleOnce(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	h := NewHeapFloor(64 * mib) // a goal far above this binary's heap: no collection but ours
	for range 3 {
		if !h.Start() {
			t.Fatal("Start = false")
		}
		h.Stop()
	}
	if !h.Start() {
		t.Fatal("Start = false")
	}
	defer h.Stop()
	const collections = 10
	for i := 1; i <= collections; i++ {
		collectUntil(t, h, i)
	}
	time.Sleep(50 * time.Millisecond) // let any second chain's cleanups run too
	h.mu.Lock()
	cycles := h.cycles
	h.mu.Unlock()
	if cycles > collections+2 {
		t.Fatalf("%d collections paced after %d runtime.GC calls: more than one chain of cleanups", cycles, collections)
	}
}
