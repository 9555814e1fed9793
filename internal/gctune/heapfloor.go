// Package gctune paces the Go garbage collector for a service whose live heap
// is small: a heap floor, below which the collector does not run, while above
// it GOGC applies as usual.
//
// The runtime's own floor (4 MiB at GOGC=100) is far above the service's live
// heap at low concurrency, so the collector ran many times a second and
// lengthened the requests' tail. Unlike a higher GOGC, a floor costs memory
// only while the live heap is small, none once twice the live heap exceeds
// it (docs/performance.md).
package gctune

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// runtimeHeapMinimum is the runtime's own floor at GOGC=100, which it scales
// with GOGC (runtime/mgcpacer.go, defaultHeapMinimum): a GOGC of p never
// lets a cycle start below runtimeHeapMinimum*p/100 bytes.
const runtimeHeapMinimum = 4 << 20

// pacing is held by the HeapFloor that paces the process: the GC percentage
// is the process's, so two would undo each other's settings (tests start
// several applications in one process).
var pacing atomic.Bool

// The runtime/metrics samples a cycle's adjustment reads.
const (
	metricLive    = "/gc/heap/live:bytes"    // marked live by the last cycle
	metricStack   = "/gc/scan/stack:bytes"   // stack scanned by the last cycle
	metricGlobals = "/gc/scan/globals:bytes" // scannable globals
	metricPercent = "/gc/gogc:percent"       // GOGC in force
)

// HeapFloor keeps the heap goal of every collection at or above its floor,
// and otherwise at what GOGC makes it. After each collection it sets the GC
// percentage (debug.SetGCPercent) that puts the next goal at the floor, or
// at GOGC's own goal when that is higher: it never collects more often than
// GOGC alone would. The percentage is the process's, so one HeapFloor at a
// time paces it; a GOMEMLIMIT still bounds the heap.
type HeapFloor struct {
	floor uint64

	mu      sync.Mutex
	running bool
	base    int // GOGC when started: the percentage above the floor
	percent int // the percentage set last
	cycles  int // collections paced since Start
	// run counts the Starts: a cleanup armed in an earlier run (before a
	// Stop) ends its chain instead of pacing beside the current one.
	run     uint64
	samples []metrics.Sample
}

// NewHeapFloor returns a HeapFloor of floor bytes; Start starts it.
func NewHeapFloor(floor uint64) *HeapFloor {
	return &HeapFloor{floor: floor, samples: []metrics.Sample{
		{Name: metricLive}, {Name: metricStack}, {Name: metricGlobals},
	}}
}

// Start takes the GOGC in force as the percentage above the floor and paces
// every collection from the next one on. It does nothing, and reports false,
// when the floor is 0, GOGC is off (a negative percentage) or another
// HeapFloor paces the process: then the pace is not this one's to set.
func (h *HeapFloor) Start() bool {
	gogc := currentPercent()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running || h.floor == 0 || gogc < 0 || !pacing.CompareAndSwap(false, true) {
		return false
	}
	h.running, h.base, h.percent, h.cycles = true, gogc, gogc, 0
	h.run++
	h.adjustLocked()
	h.watchNextCycle()
	return true
}

// Stop sets GOGC back to what it was at Start; collections are paced by the
// runtime alone from then on.
func (h *HeapFloor) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running {
		return
	}
	h.running = false
	if h.percent != h.base {
		debug.SetGCPercent(h.base)
		h.percent = h.base
	}
	pacing.Store(false)
}

// Percent is the GC percentage the HeapFloor set last (GOGC's while it is
// stopped).
func (h *HeapFloor) Percent() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.percent
}

// cycleMark is allocated for one collection: the cleanup attached to it runs
// once a collection has found it unreachable, which is after every cycle.
// A pointer field keeps it out of the tiny allocator, where it would share
// a block with other objects and its cleanup could be held back with them
// (runtime.AddCleanup's documentation).
type cycleMark struct{ _ *byte }

// cycleWatch is what a cleanup needs: the HeapFloor, and the run it was
// armed in.
type cycleWatch struct {
	h   *HeapFloor
	run uint64
}

// watchNextCycle arranges for afterCycle to run after the next collection.
func (h *HeapFloor) watchNextCycle() {
	runtime.AddCleanup(new(cycleMark), afterCycle, cycleWatch{h: h, run: h.run})
}

// afterCycle runs on the runtime's cleanup goroutine after a collection.
func afterCycle(w cycleWatch) {
	h := w.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running || w.run != h.run {
		return
	}
	h.cycles++
	h.adjustLocked()
	h.watchNextCycle()
}

// adjustLocked sets the percentage that puts the next heap goal at the
// floor, given what the last collection marked.
func (h *HeapFloor) adjustLocked() {
	metrics.Read(h.samples)
	p := floorPercent(h.floor, h.base, h.samples[0].Value.Uint64(), h.samples[1].Value.Uint64()+h.samples[2].Value.Uint64())
	if p != h.percent {
		debug.SetGCPercent(p)
		h.percent = p
	}
}

// floorPercent is the GC percentage whose heap goal is floor bytes after a
// collection that marked live bytes of heap and scanned roots bytes of
// stacks and globals, or base when base's goal is higher. The runtime's goal
// for a percentage p is the larger of live + (live+roots)*p/100 and its own
// minimum, runtimeHeapMinimum*p/100, so p stays at most the percentage whose
// minimum is the floor.
func floorPercent(floor uint64, base int, live, roots uint64) int {
	if live >= floor {
		return base
	}
	p := math.Ceil(float64(floor-live) * 100 / float64(max(live+roots, 1)))
	p = min(p, float64(floor)*100/runtimeHeapMinimum)
	if p <= float64(base) {
		return base
	}
	return int(p)
}

// currentPercent is the GC percentage in force (GOGC, or what
// debug.SetGCPercent set last); negative when collection is off.
func currentPercent() int {
	s := []metrics.Sample{{Name: metricPercent}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	v := s[0].Value.Uint64()
	if v > math.MaxInt32 { // GOGC=off reads as a wrapped -1
		return -1
	}
	return int(v)
}
