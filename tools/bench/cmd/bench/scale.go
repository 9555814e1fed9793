package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/tools/bench/internal/load"
	"github.com/plantstore/plantstore/tools/bench/internal/report"
	"github.com/plantstore/plantstore/tools/bench/internal/stats"
)

// The -scale run (make bench-scale): the store's cost by the number of plants
// it holds. The plants the sizes are made of start at fillFirst, one
// unbroken run of ids that nothing deletes (the reads draw from it); the
// creates take ids from createFirst on, the delete pools from deleteFirst
// on, and the 1.0.0 plants of the migration from legacyFirst on.
const (
	createFirst = int64(3) << 40
	legacyFirst = int64(4) << 40
)

// scaleOptions are the -scale flags.
type scaleOptions struct {
	sizes          []int64
	base           int64
	window, warmup time.Duration
	rounds         int
	forkRate       float64
	migrate        int64
	outage, drain  time.Duration
}

// scaleConns are the closed loops' connections at every size.
var scaleConns = []int{10, 50}

// scalePaths are the report, the run's data and the chart of a -scale run:
// the sizing block of out, and beside it <name>-scale.json and .png.
func scalePaths(out string) (data, png string) {
	stem := strings.TrimSuffix(out, filepath.Ext(out)) + "-scale"
	return stem + ".json", stem + ".png"
}

// scaleMain is the -scale run, or its -render.
func (h *harness) scaleMain(ctx context.Context, root, out string) (int, error) {
	data, png := scalePaths(out)
	if h.opts.render {
		sr, err := readData[report.ScaleRun](data)
		if err != nil {
			return 1, err
		}
		// The data again too: what it renders (the chart's name) is part of it.
		if err := writeScale(sr, out, png, data); err != nil {
			return 1, err
		}
		h.logf("rendered %s's sizing block and %s from %s", out, png, data)
		return 0, nil
	}
	if err := checkSection(out, report.SizingSection); err != nil {
		return 1, err
	}
	var err error
	if h.work, err = os.MkdirTemp("", "plantstore-bench-scale-"); err != nil {
		return 1, err
	}
	h.run = &report.Run{Machine: machine()}
	sr := &report.ScaleRun{
		Date: time.Now(), Command: command(), Short: h.opts.short, Conns: scaleConns,
		Warmup: h.opts.scale.warmup, Window: h.opts.scale.window, Rounds: h.opts.scale.rounds, ForkRate: h.opts.scale.forkRate,
	}
	h.logf("plantstore bench -scale: sizes %v after a base of %d plants, work dir %s, load average %s", h.opts.scale.sizes, h.opts.scale.base, h.work, h.run.Machine.LoadBefore)
	if err := h.scale(ctx, root, sr); err != nil {
		return 1, err
	}
	sr.Machine = h.run.Machine
	sr.Machine.LoadAfter = loadAverage()
	sr.Elapsed = time.Since(h.start)
	// A request that failed fails the CI run; a full run reports it: on
	// the shared machine a starved Redis answers some requests past their
	// deadline (503), and the run's other figures still stand.
	sr.Judge()
	if len(sr.Failures) > 0 && h.opts.out == "" && !h.opts.short {
		out = filepath.Join(h.work, "performance.md")
		data, png = scalePaths(out)
		h.logf("the run failed: writing its report to %s, not to docs/", out)
	}
	if err := writeScale(sr, out, png, data); err != nil {
		return 1, err
	}
	fmt.Printf("%s\n", report.Sizing(sr))
	h.logf("wrote %s (sizing block), %s and %s in %s", out, png, data, sr.Elapsed.Round(time.Second))
	code := h.logFailures(sr.Failures, "failed requests", sr.Errors)
	for _, g := range sr.Goals() {
		h.logf("goal %-60s %s (%s)", g.Name, report.Verdict(g.Pass), g.Measured)
	}
	return code, nil
}

// writeScale draws the chart, renders the run into out's sizing block and
// saves the run's data.
func writeScale(sr *report.ScaleRun, out, png, data string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	sr.PNG = ""
	// The verdicts again, from the figures: -render applies the rules
	// of this harness to the data.
	if err := report.ScaleChart(sr, png); err != nil {
		sr.Judge(err.Error())
	} else {
		sr.Judge()
		if filepath.Dir(png) == filepath.Dir(out) {
			sr.PNG = filepath.Base(png)
		}
	}
	return writeDoc(out, report.SizingSection, report.Sizing(sr), data, sr)
}

// scale measures the migration, every size, then the outbox on the largest.
func (h *harness) scale(ctx context.Context, root string, sr *report.ScaleRun) error {
	o := h.opts.scale
	h.logf("building the service (release flags)")
	service := filepath.Join(h.work, "plantstore")
	if err := h.goBuild(ctx, root, "build", "-trimpath", "-ldflags", "-s -w", "-o", service, "./cmd/plantstore"); err != nil {
		return err
	}
	addr, args, err := h.startStore(ctx, root)
	if err != nil {
		return err
	}
	rdb := h.rdb
	defer rdb.Close()
	sr.Appendfsync = h.run.Appendfsync
	empty, err := redisInfoInt(ctx, rdb, "memory", "used_memory")
	if err != nil {
		return err
	}
	if err := rdb.ConfigSet(ctx, "latency-monitor-threshold", "100").Err(); err != nil {
		return err
	}
	env, _, err := h.tracedEnv("parentbased_traceidratio", "0.1")
	if err != nil {
		return err
	}
	starts := 0
	startServiceOn := func(redisAddr string, extra ...string) (*server, error) {
		starts++
		return h.launch(ctx, "plantstore", service, slices.Concat([]string{"--redis-addr", redisAddr}, args, extra), env, fmt.Sprintf("service-%d.log", starts))
	}
	startService := func(extra ...string) (*server, error) { return startServiceOn(addr, extra...) }

	if o.migrate > 0 {
		if sr.Migration, err = h.migration(ctx, service, addr, env, o.migrate); err != nil {
			return fmt.Errorf("the migration: %w", err)
		}
		if err := resetRedis(ctx, rdb); err != nil {
			return err
		}
	}

	h.ids.Store(createFirst)
	grown := &scaleStore{rdb: rdb} // the store the sizes fill
	var ref *scaleStore            // the base size's second store, beside every later size
	for i, target := range append([]int64{o.base}, o.sizes...) {
		stored, err := plantsStored(ctx, rdb)
		if err != nil {
			return err
		}
		if n := target - stored; n > 0 {
			began := time.Now()
			if err := fill(ctx, rdb, fillFirst+grown.filled, n); err != nil {
				return err
			}
			grown.filled += n
			h.logf("filled %d plants in %s", n, time.Since(began).Round(time.Millisecond))
		}
		size := report.ScaleSize{EmptyUsedMemory: empty}
		if size.Plants, err = plantsStored(ctx, rdb); err != nil {
			return err
		}
		if err := h.measureMemory(ctx, rdb, &size, sr); err != nil {
			return err
		}
		if err := rdb.Do(ctx, "latency", "reset").Err(); err != nil {
			return err
		}
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			return err
		}
		if grown.svc != nil {
			grown.svc.stop()
		}
		if grown.svc, err = startService(); err != nil {
			return err
		}
		svc := grown.svc
		size.ReadyMs = stats.Millis(svc.ready)
		tag := fmt.Sprintf("[%s plants]", strconv.FormatInt(size.Plants, 10))
		h.logf("%s used_memory %d B (%.0f B a plant), ready in %.1f ms", tag, size.UsedMemory, size.PerPlant(), size.ReadyMs)
		if i > 0 && ref == nil {
			// The second store, which holds the base size's plants beside
			// every later size's phases, and its service.
			refAddr, refRDB, err := h.startRedis(ctx, "redis-base")
			if err != nil {
				return err
			}
			ref = &scaleStore{rdb: refRDB}
			if ref.svc, err = startServiceOn(refAddr); err != nil {
				return err
			}
		}
		for _, c := range scaleConns {
			for _, op := range report.ScaleOps {
				var m report.OpMeasure
				var beside string
				if i == 0 {
					m, err = h.scalePhase(ctx, grown, op, c)
				} else {
					var pairs []report.Pair
					pairs, err = h.pairedPhases(ctx, grown, ref, o.base, op, c)
					size.Pairs = append(size.Pairs, pairs...)
					m = medianOf(pairs, func(p report.Pair) report.OpMeasure { return p.Size })
					b := medianOf(pairs, func(p report.Pair) report.OpMeasure { return p.Base })
					beside = fmt.Sprintf("; beside it the base: %8.0f req/s, p99 %.2f ms", b.Rate, b.P99)
				}
				if err != nil {
					return fmt.Errorf("%s %s at %d connections: %w", tag, op, c, err)
				}
				size.Ops = append(size.Ops, m)
				h.logf("%s %-55s %2d conns: %8.0f req/s, p50 %.2f ms, p99 %.2f ms, failed %d%s", tag, op, c, m.Rate, m.P50, m.P99, m.Failed, beside)
			}
		}
		info, err := rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		if size.UsecPerCall, err = parseUsecPerCall(info); err != nil {
			return err
		}
		create := svc.target.With(load.Create{IDs: &h.ids})
		base, err := openFor(ctx, create, o.forkRate, func() bool { return true }, min(2*time.Second, 2*o.window))
		if err != nil {
			return err
		}
		size.BaseP99Ms = stats.Millis(stats.Summarise(base.Latencies).P99)
		for _, kind := range []string{report.ForkRewrite, report.ForkSnapshot} {
			f, err := h.underFork(ctx, rdb, create, kind)
			if err != nil {
				return fmt.Errorf("%s %s: %w", tag, kind, err)
			}
			size.Forks = append(size.Forks, f)
			h.logf("%s %s: %.2f s, fork %.1f ms, COW %d B, creates' p99 %.2f ms (%.2f without), %d of %d failed, %s",
				tag, kind, f.Ms/1000, float64(f.ForkUsec)/1000, f.COWBytes, f.P99Ms, size.BaseP99Ms, f.Failed, f.Requests, f.Status)
		}
		if size.LongestFastMs, size.LongestCommandMs, err = longestCommands(ctx, rdb); err != nil {
			return err
		}
		if size.AOFBytes, err = dirSize(filepath.Join(h.work, "redis", "appendonlydir")); err != nil {
			return err
		}
		sr.Sizes = append(sr.Sizes, size)
	}
	if ref != nil {
		ref.svc.stop()
	}
	if o.outage > 0 {
		grown.svc.stop()
		if sr.Outbox, err = h.outbox(ctx, rdb, startService); err != nil {
			return fmt.Errorf("the outbox: %w", err)
		}
	}
	return nil
}

// scaleStore is a Redis the -scale run measures and the service in front
// of it: the plants filled from fillFirst, and the delete pools' ids used
// from deleteFirst.
type scaleStore struct {
	rdb            *redis.Client
	svc            *server
	filled, pooled int64
	createRate     float64 // the last create phase's, which sizes the next delete pool
}

// scalePhase runs op's closed loop at c connections against st.
func (h *harness) scalePhase(ctx context.Context, st *scaleStore, op string, c int) (report.OpMeasure, error) {
	o := h.opts.scale
	var route load.Route
	switch op {
	case report.OpGet:
		route = load.Get{First: fillFirst, N: st.filled}
	case report.OpListHead:
		route = load.List{Limit: 20, Pages: 1}
	case report.OpListDeep:
		route = load.List{Limit: 20, Pages: 1, Start: "/plants?limit=20&cursor=" + httpapi.EncodeCursor(fillFirst+st.filled/2)}
	case report.OpCreate:
		route = load.Create{IDs: &h.ids}
	case report.OpDelete:
		// At least 20,000/s: a slow create phase on the shared machine
		// must not leave the deletes a pool they run through.
		n := deletePool(max(st.createRate, 20000), o.warmup+o.window)
		if err := fill(ctx, st.rdb, deleteFirst+st.pooled, n); err != nil {
			return report.OpMeasure{}, err
		}
		route = load.NewDelete(deleteFirst+st.pooled, n)
		st.pooled += n
	}
	res, err := st.svc.target.With(route).Closed(ctx, c, o.warmup, o.window, nil, nil)
	if err != nil {
		return report.OpMeasure{}, err
	}
	l := stats.Summarise(res.Latencies)
	m := report.OpMeasure{Op: op, Conns: c, Rate: res.Throughput(), P50: stats.Millis(l.P50), P99: stats.Millis(l.P99), Failed: res.Failed(), Error: res.FirstError}
	if op == report.OpCreate {
		st.createRate = m.Rate
	}
	return m, nil
}

// pairedPhases runs op at c connections on the size's store and on the
// base size's in turns, -scale-rounds times, which of the two goes first
// alternating. The base store is emptied and filled to base plants before
// each of its phases, so that every one starts from the base size whatever
// the ones before created.
func (h *harness) pairedPhases(ctx context.Context, size, ref *scaleStore, base int64, op string, c int) ([]report.Pair, error) {
	pairs := make([]report.Pair, h.opts.scale.rounds)
	for r := range pairs {
		for turn := range 2 {
			if (r+turn)%2 == 1 {
				var err error
				if pairs[r].Size, err = h.scalePhase(ctx, size, op, c); err != nil {
					return nil, err
				}
				continue
			}
			if err := ref.rdb.FlushAll(ctx).Err(); err != nil {
				return nil, err
			}
			if err := fill(ctx, ref.rdb, fillFirst, base); err != nil {
				return nil, err
			}
			ref.filled = base
			var err error
			if pairs[r].Base, err = h.scalePhase(ctx, ref, op, c); err != nil {
				return nil, fmt.Errorf("on the base store: %w", err)
			}
		}
	}
	return pairs, nil
}

// medianOf is the median of the rounds' figures (rate, p50 and p99 each on
// its own), their failed requests summed and the first error kept.
func medianOf(pairs []report.Pair, side func(report.Pair) report.OpMeasure) report.OpMeasure {
	var rate, p50, p99 []float64
	var m report.OpMeasure
	for _, p := range pairs {
		s := side(p)
		m.Op, m.Conns = s.Op, s.Conns
		rate, p50, p99 = append(rate, s.Rate), append(p50, s.P50), append(p99, s.P99)
		m.Failed += s.Failed
		if m.Error == "" {
			m.Error = s.Error
		}
	}
	m.Rate, m.P50, m.P99 = stats.Summary(rate).Median, stats.Summary(p50).Median, stats.Summary(p99).Median
	return m
}

// plantsStored counts the plants the listing indexes hold.
func plantsStored(ctx context.Context, rdb *redis.Client) (int64, error) {
	cmds, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for s := range store.Shards {
			pipe.ZCard(ctx, store.PlantIndexKey(keyPrefix, int64(s)))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, c := range cmds {
		n += c.(*redis.IntCmd).Val()
	}
	return n, nil
}

// measureMemory reads Redis's memory at the size: INFO's used_memory and
// RSS, MEMORY USAGE of one plant's key and of the indexes (every entry
// counted: SAMPLES 0) over their members; and the sizes of a plant's value
// and key.
func (h *harness) measureMemory(ctx context.Context, rdb *redis.Client, size *report.ScaleSize, sr *report.ScaleRun) error {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return err
	}
	if size.UsedMemory, err = infoInt(info, "used_memory"); err != nil {
		return err
	}
	if size.UsedMemoryRSS, err = infoInt(info, "used_memory_rss"); err != nil {
		return err
	}
	key := store.PlantKey(keyPrefix, fillFirst)
	value, err := rdb.Get(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("the first plant of the fill: %w", err)
	}
	sr.PlantBytes, sr.KeyBytes = len(value), len(key)
	if size.KeyUsage, err = rdb.MemoryUsage(ctx, key, 0).Result(); err != nil {
		return err
	}
	var index int64
	for s := range store.Shards {
		n, err := rdb.MemoryUsage(ctx, store.PlantIndexKey(keyPrefix, int64(s)), 0).Result()
		if err != nil {
			return err
		}
		index += n
	}
	size.IndexEntry = float64(index) / float64(max(size.Plants, 1))
	return nil
}

// openFor runs the open loop at rate in turns of about a second until done
// reports true at the end of a turn, or for at least least, and merges the
// turns' results.
func openFor(ctx context.Context, t *load.Target, rate float64, done func() bool, least time.Duration) (load.Result, error) {
	var all load.Result
	start := time.Now()
	for {
		r, err := t.Open(ctx, rate, time.Second, maxInFlight)
		if err != nil {
			return all, err
		}
		all.Add(r)
		if time.Since(start) >= least && done() {
			return all, nil
		}
	}
}

// underFork starts kind (an AOF rewrite or an RDB snapshot) half a second
// into an open loop of creates at -fork-rate, which runs on for a turn after
// the child has ended, and reads what Redis reports of it.
func (h *harness) underFork(ctx context.Context, rdb *redis.Client, create *load.Target, kind string) (report.ForkMeasure, error) {
	f := report.ForkMeasure{Kind: kind}
	var ended atomic.Bool
	var res load.Result
	var loopErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		res, loopErr = openFor(ctx, create, h.opts.scale.forkRate, ended.Load, 0)
	})
	stopLoad := func() { ended.Store(true); wg.Wait() }
	defer stopLoad()
	time.Sleep(500 * time.Millisecond)
	begin := time.Now()
	inProgress, cow, status := "aof_rewrite_in_progress", "aof_last_cow_size", "aof_last_bgrewrite_status"
	start := rdb.BgRewriteAOF
	if kind == report.ForkSnapshot {
		inProgress, cow, status = "rdb_bgsave_in_progress", "rdb_last_cow_size", "rdb_last_bgsave_status"
		start = rdb.BgSave
	}
	// Redis refuses a fork while it still reaps the previous child.
	var err error
	for range 200 {
		if err = start(ctx).Err(); err == nil || !strings.Contains(err.Error(), "child process") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return f, err
	}
	info, err := awaitChild(ctx, rdb, inProgress, 10*time.Millisecond)
	if err != nil {
		return f, err
	}
	f.Ms = stats.Millis(time.Since(begin))
	stopLoad()
	if loopErr != nil {
		return f, loopErr
	}
	f.COWBytes, _ = infoInt(info, cow)
	f.Status = infoField(info, status)
	if f.ForkUsec, err = redisInfoInt(ctx, rdb, "stats", "latest_fork_usec"); err != nil {
		return f, err
	}
	f.P99Ms = stats.Millis(stats.Summarise(res.Latencies).P99)
	// Requests not answered are the loop's Errors: each counted once.
	f.Requests, f.Failed, f.FirstError = res.Requests, res.Bad+res.Scheduled-res.Requests, res.FirstError
	return f, nil
}

// longestCommands reads the longest "fast-command" and "command" events of
// Redis's latency monitor since its last reset (LATENCY LATEST: name, time,
// latest ms, longest ms); 0 for an event that did not pass the threshold.
func longestCommands(ctx context.Context, rdb *redis.Client) (fast, other int64, err error) {
	v, err := rdb.Do(ctx, "latency", "latest").Slice()
	if err != nil {
		return 0, 0, err
	}
	for _, e := range v {
		ev, ok := e.([]any)
		if !ok || len(ev) < 4 {
			continue
		}
		name, _ := ev[0].(string)
		longest, _ := ev[3].(int64)
		switch name {
		case "fast-command":
			fast = longest
		case "command":
			other = longest
		}
	}
	return fast, other, nil
}

// parseUsecPerCall reads the usec_per_call of report.CallCommands out of
// INFO commandstats' answer; a command not called is left out.
func parseUsecPerCall(info string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, c := range report.CallCommands {
		for f := range strings.SplitSeq(infoField(info, "cmdstat_"+c), ",") {
			if v, ok := strings.CutPrefix(f, "usec_per_call="); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("INFO commandstats of %s: %w", c, err)
				}
				out[c] = n
			}
		}
	}
	return out, nil
}

// dirSize is the bytes of the files in dir.
func dirSize(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n, nil
}

// migration fills n plants in the 1.0.0 layout (store.FillLegacy) and times
// `plantstore migrate-store`, one pass, from exec to exit.
func (h *harness) migration(ctx context.Context, service, addr string, env []string, n int64) (*report.MigrationMeasure, error) {
	began := time.Now()
	if err := store.FillLegacy(ctx, h.rdb, keyPrefix, int(n), func(i int) plant.Plant { return benchPlant(legacyFirst + int64(i)) }); err != nil {
		return nil, err
	}
	h.logf("filled %d plants in the 1.0.0 layout in %s", n, time.Since(began).Round(time.Millisecond))
	if err := h.rdb.BgRewriteAOF(ctx).Err(); err != nil { // the migration's own writes, not the fill's, in the AOF
		return nil, err
	}
	p, err := h.spawn("migrate-store", service, []string{"migrate-store", "--redis-addr", addr}, env, "migrate-store.log")
	if err != nil {
		return nil, err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	took := time.Since(p.started)
	if p.waitErr != nil {
		return nil, fmt.Errorf("migrate-store: %v\n%s", p.waitErr, p.logTail())
	}
	if moved, err := plantsStored(ctx, h.rdb); err != nil || moved != n {
		return nil, fmt.Errorf("migrate-store left %d plants indexed of %d (%v):\n%s", moved, n, err, p.logTail())
	}
	m := &report.MigrationMeasure{Plants: n, Seconds: took.Seconds(), Output: strings.TrimSpace(p.logTail())}
	h.logf("migrate-store moved %d plants in %.1f s: %s", n, m.Seconds, m.Output)
	return m, nil
}

// subscriber is the webhook receiver of the outbox phase: 503 while down,
// else 204, keeping the ids of the plant.created events it took.
type subscriber struct {
	down atomic.Bool
	mu   sync.Mutex
	ids  map[int64]bool
}

func (s *subscriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if s.down.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if ev.Type == "plant.created" {
		s.mu.Lock()
		s.ids[ev.Data.ID] = true
		s.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// received counts the created events the subscriber took of ids first to last.
func (s *subscriber) received(first, last int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for id := range s.ids {
		if id >= first && id <= last {
			n++
		}
	}
	return n
}

// outbox starts the service with a webhook subscriber on loopback, takes the
// subscriber down for -outage under creates at -fork-rate, then brings it
// back with the creates stopped and waits until the outbox is empty, for at
// most -drain. An event neither received nor still in the outbox is lost.
func (h *harness) outbox(ctx context.Context, rdb *redis.Client, start func(extra ...string) (*server, error)) (*report.OutboxMeasure, error) {
	o := h.opts.scale
	sub := &subscriber{ids: map[int64]bool{}}
	srv, addr, err := serve(sub)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	subs := filepath.Join(h.work, "subscribers")
	if err := os.WriteFile(subs, fmt.Appendf(nil, "http://%s/hook whsec_%s\n", addr, base64.StdEncoding.EncodeToString(secret)), 0o600); err != nil {
		return nil, err
	}
	svc, err := start("--webhook-subscribers-file", subs, "--webhook-allow-cidrs", "127.0.0.1/32")
	if err != nil {
		return nil, err
	}
	defer svc.stop()
	m := &report.OutboxMeasure{Outage: o.outage, Rate: o.forkRate}
	if m.Plants, err = plantsStored(ctx, rdb); err != nil {
		return nil, err
	}
	outbox := store.NewRedisOutbox(rdb, keyPrefix)
	sub.down.Store(true)
	first := h.ids.Load() + 1
	h.logf("[outbox] subscriber down for %s under %.0f creates/s", o.outage, o.forkRate)
	began := time.Now()
	var res load.Result
	for time.Since(began) < o.outage {
		r, err := svc.target.Open(ctx, o.forkRate, min(5*time.Second, o.outage-time.Since(began)), maxInFlight)
		if err != nil {
			return nil, err
		}
		res.Add(r)
		st, err := outbox.Stats(ctx)
		if err != nil {
			return nil, err
		}
		m.MaxBacklog = max(m.MaxBacklog, st.Events+st.Tasks)
	}
	last := h.ids.Load()
	m.Created = res.Statuses[200]
	m.Failed = res.Bad + res.Scheduled - res.Requests
	downMem, err := redisInfoInt(ctx, rdb, "memory", "used_memory")
	if err != nil {
		return nil, err
	}
	h.logf("[outbox] %d creates answered 200, %d failed; backlog at most %d, used_memory %d B; subscriber back", m.Created, m.Failed, m.MaxBacklog, downMem)
	sub.down.Store(false)
	back := time.Now()
	deadline := back.Add(o.drain)
	var st store.OutboxStats
	for {
		if st, err = outbox.Stats(ctx); err != nil {
			return nil, err
		}
		if st.Events+st.Tasks == 0 && sub.received(first, last) >= m.Created {
			m.Drained = true
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	m.DrainSec = time.Since(back).Seconds()
	m.Received = sub.received(first, last)
	m.Delivered = m.Received
	// One subscriber, and no deletes while it was down: every event and
	// delivery still in the outbox is one of the outage's creates.
	m.Pending = st.Events + st.Tasks
	m.Lost = max(0, m.Created-m.Received-m.Pending)
	m.DeadLetters = st.DeadLetters
	drainedMem, err := redisInfoInt(ctx, rdb, "memory", "used_memory")
	if err != nil {
		return nil, err
	}
	m.MemoryBytes = downMem - drainedMem
	h.logf("[outbox] drained %v in %.1f s: %d events received, %d pending, %d lost, %d dead letters, outbox memory %d B", m.Drained, m.DrainSec, m.Received, m.Pending, m.Lost, m.DeadLetters, m.MemoryBytes)
	return m, nil
}
