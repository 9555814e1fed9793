package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/plantstore/plantstore/tools/bench/internal/report"
)

// sweep measures the creates' closed loop at conns connections (one of
// -sweep-conns) on the floor and the service, in the round's order (see
// pair), each started for it, so that VmHWM, the high-water mark since
// exec, read right after the phase is the peak resident memory under that
// load alone.
func (h *harness) sweep(ctx context.Context, round int, tag string, conns int, rd report.Round, variants []variant) error {
	var rs []*running
	defer func() { h.stopAll(rs) }()
	for _, name := range pair(round) {
		k := slices.IndexFunc(variants, func(v variant) bool { return v.name == name })
		if k < 0 {
			return fmt.Errorf("no variant %q to run", name)
		}
		v := variants[k]
		m := rd.Measures[name]
		if m == nil {
			return fmt.Errorf("%s: not measured in this round", name)
		}
		s, err := h.launch(ctx, v.name, v.bin, v.args, v.env, fmt.Sprintf("%s-round%d-c%d.log", v.name, round+1, conns))
		if err != nil {
			return err
		}
		rs = append(rs, &running{v: v, server: s, m: m})
	}
	for _, r := range rs {
		c, err := h.closed(ctx, r, nil, conns, h.opts.warmup, h.opts.sweepDuration)
		if err != nil {
			return err
		}
		cm := c.figures()
		if _, cm.PeakRSS, err = r.memory(); err != nil {
			return err
		}
		if r.m.Sweep == nil {
			r.m.Sweep = map[int]*report.ClosedMeasure{}
		}
		r.m.Sweep[conns] = cm
		h.logf("%s %-20s %3d connections: peak %8.0f req/s, CPU %.4f s/1k req, closed-loop p50 %.2f ms p99 %.2f ms, peak RSS %.1f MiB, failed %d",
			tag, r.v.name, conns, cm.Peak, cm.CPUPer1k, cm.P50, cm.P99, cm.PeakRSS, c.res.Failed())
	}
	return nil
}
