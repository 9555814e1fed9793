package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/tools/bench/internal/load"
	"github.com/plantstore/plantstore/tools/bench/internal/report"
)

// keyPrefix is the service's default Redis key prefix, the floor's too.
const keyPrefix = "plantstore:"

// Where the harness stores the plants of the 1.1.0 routes, above every id
// the create phases use: the reads' plants, then a delete pool per variant.
const (
	fillFirst   = int64(1) << 40
	deleteFirst = int64(2) << 40
)

// deletePool is how many ids a delete phase may take: thrice what the
// round's faster create peak would answer over the phase, and a thousand
// more, so that a phase never runs out (if it does, it fails).
func deletePool(createPeak float64, phase time.Duration) int64 {
	if !(createPeak > 0) || math.IsInf(createPeak, 0) {
		createPeak = 10000
	}
	return int64(math.Ceil(3*createPeak*phase.Seconds())) + 1000
}

// routeOf is the load generator's route for a report route name.
func routeOf(name string, fill int64, del *load.Delete) (load.Route, error) {
	switch name {
	case report.RouteGet:
		return load.Get{First: fillFirst, N: fill}, nil
	case report.RouteList20:
		return load.List{Limit: 20}, nil
	case report.RouteList100:
		return load.List{Limit: 100}, nil
	case report.RouteDelete:
		return del, nil
	}
	return nil, fmt.Errorf("no load for route %q", name)
}

// routes measures API 1.1.0's routes on the floor and the service in turn,
// one closed-loop phase per route and variant, on one store: the plants the
// round's creates left, -route-fill more stored in the service's layout for
// the reads, and before each delete phase a pool of fresh ids for it. The
// floor and the service run in the round's order (see pair).
func (h *harness) routes(ctx context.Context, round int, tag string, rd report.Round, rs []*running) error {
	order := inOrder(rs, pair(round))
	if len(order) != 2 {
		return fmt.Errorf("the routes need the floor and the service, running %d of them", len(order))
	}
	began := time.Now()
	if err := fill(ctx, h.rdb, fillFirst, h.opts.routeFill); err != nil {
		return err
	}
	h.logf("%s stored %d plants for the reads in %s", tag, h.opts.routeFill, time.Since(began).Round(time.Millisecond))
	createPeak := max(rd.Measures[report.Floor].Peak, rd.Measures[report.Service].Peak)
	pool := deletePool(createPeak, h.opts.routeWarmup+h.opts.routeDuration)
	for _, name := range report.Routes {
		for i, r := range order {
			var del *load.Delete
			if name == report.RouteDelete {
				first := deleteFirst + int64(i)*pool
				if err := fill(ctx, h.rdb, first, pool); err != nil {
					return err
				}
				del = load.NewDelete(first, pool)
			}
			route, err := routeOf(name, h.opts.routeFill, del)
			if err != nil {
				return err
			}
			c, err := h.closed(ctx, r, route, h.opts.conns, h.opts.routeWarmup, h.opts.routeDuration)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			rm := c.figures()
			if r.m.Routes == nil {
				r.m.Routes = map[string]*report.ClosedMeasure{}
			}
			r.m.Routes[name] = rm
			extra := ""
			if del != nil {
				extra = fmt.Sprintf(", %d of a pool of %d ids deleted", del.Sent(), pool)
			}
			h.logf("%s %-20s %-22s peak %8.0f req/s, CPU %.4f s/1k req, closed-loop p50 %.2f ms p99 %.2f ms, failed %d%s",
				tag, r.v.name, name, rm.Peak, rm.CPUPer1k, rm.P50, rm.P99, rm.Bad+rm.Errors, extra)
		}
	}
	return nil
}

// fill stores n plants with ids from first on, as the service's creates
// leave them (the service's own store.Fill), for the reads and deletes.
func fill(ctx context.Context, rdb redis.Cmdable, first, n int64) error {
	return store.Fill(ctx, rdb, keyPrefix, int(n), func(i int) plant.Plant { return benchPlant(first + int64(i)) })
}

// benchPlant is plant id as the load generator creates and expects it.
func benchPlant(id int64) plant.Plant {
	tag := load.PlantTag
	return plant.Plant{ID: id, Name: load.PlantName, Tag: &tag}
}
