package gctune

import (
	"go.uber.org/fx"
	"go.uber.org/zap"
)

// Options configure the collector's pace.
type Options struct {
	// HeapFloorMiB is the heap, in MiB, below which no collection starts;
	// 0 leaves the pace to the runtime (GOGC alone).
	HeapFloorMiB int
}

// DefaultHeapFloorMiB is the heap floor unless configured otherwise: the
// heap goal GOGC=100 already gives the service under load, so the floor
// costs memory only at low concurrency (docs/performance.md, heap floor).
const DefaultHeapFloorMiB = 12

// Params are what the module needs.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Options   Options
	Log       *zap.Logger
}

// Module paces the collector from start to stop.
var Module = fx.Module("gctune", fx.Invoke(register))

func register(p Params) {
	floor := NewHeapFloor(uint64(max(p.Options.HeapFloorMiB, 0)) << 20)
	log := p.Log.Named("gctune")
	p.Lifecycle.Append(fx.StartStopHook(func() {
		if floor.Start() {
			log.Info("GC heap floor set", zap.Int("heap_floor_mib", p.Options.HeapFloorMiB), zap.Int("gc_percent", floor.Percent()))
		}
	}, floor.Stop))
}
