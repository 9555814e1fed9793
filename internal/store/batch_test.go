package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/store/storetest"
)

// batched returns a repository on client whose single commands go through
// a Batcher of o, and the registry its batch sizes are on.
func batched(t *testing.T, client redis.UniversalClient, o store.BatchOptions) (*store.Redis, *store.Batcher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	b, err := store.NewBatcher(client, o, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		closed := make(chan struct{})
		go func() { _ = b.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second): // a send's place never given back
			t.Error("the batcher did not close within 10s")
		}
	})
	return store.NewRedis(client, "plantstore:").Batch(b), b, reg
}

// batchSizes returns how many pipelines the batcher sent and the sum of
// their sizes.
func batchSizes(t *testing.T, reg *prometheus.Registry) (count uint64, sum float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "plantstore_redis_batch_size" && f.GetType() == dto.MetricType_HISTOGRAM {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatal("no plantstore_redis_batch_size histogram")
	return 0, 0
}

// pipelineStarts signals each pipeline the client is about to send, by its
// number of commands, and each command sent alone, as 1.
type pipelineStarts chan int

func (p pipelineStarts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (p pipelineStarts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		select {
		case p <- 1:
		default:
		}
		return next(ctx, cmd)
	}
}
func (p pipelineStarts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		select {
		case p <- len(cmds):
		default:
		}
		return next(ctx, cmds)
	}
}

// oneInFlight returns a repository batched with one pipeline in flight on a fresh
// Redis, its connection already dialled (plant 1000 stored), and the
// channel on which the client reports each pipeline it starts.
func oneInFlight(t *testing.T) (*redistest.Server, *store.Redis, *store.Batcher, *prometheus.Registry, pipelineStarts) {
	t.Helper()
	srv := redistest.Start(t)
	client := newClient(t, store.RedisOptions{Addrs: []string{srv.Addr}})
	starts := make(pipelineStarts, 1)
	client.AddHook(starts)
	r, b, reg := batched(t, client, store.BatchOptions{InFlight: 1})
	if _, _, err := r.Create(context.Background(), plant.Plant{ID: 1000, Name: "warm"}); err != nil {
		t.Fatal(err)
	}
	<-starts
	return srv, r, b, reg, starts
}

// stallBatch makes the next commands form one batch: with Redis stopped
// (SIGSTOP) and one pipeline in flight, first is sent and holds it; then every
// command of rest is queued behind it. It returns once all of rest are
// queued; the caller resumes srv.
func stallBatch(t *testing.T, srv *redistest.Server, b *store.Batcher, starts pipelineStarts, first func(), rest []func()) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	srv.Pause()
	wg.Go(first)
	select {
	case <-starts:
	case <-time.After(10 * time.Second):
		srv.Resume()
		t.Fatal("the first command's pipeline was never sent")
	}
	for _, f := range rest {
		wg.Go(f)
	}
	deadline := time.Now().Add(10 * time.Second)
	for store.BatchQueued(b) < len(rest) {
		if time.Now().After(deadline) {
			srv.Resume()
			t.Fatalf("%d of %d commands queued", store.BatchQueued(b), len(rest))
		}
		time.Sleep(time.Millisecond)
	}
	return &wg
}

// TestBatchConformance runs the conformance suite through the batcher, on
// a single node and on a Cluster (whose pipelines go-redis splits by slot).
func TestBatchConformance(t *testing.T) {
	single := redistest.Start(t)
	cluster := redistest.StartCluster(t, 3)
	for _, tc := range []struct {
		name    string
		addrs   []string
		masters []*redistest.Server
	}{
		{"single node", []string{single.Addr}, []*redistest.Server{single}},
		{"cluster", cluster.Addrs(), cluster.Masters},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) storetest.Repository {
				for _, m := range tc.masters {
					if err := m.Client().FlushAll(context.Background()).Err(); err != nil {
						t.Fatal(err)
					}
				}
				client := newClient(t, store.RedisOptions{Addrs: tc.addrs, Cluster: len(tc.addrs) > 1})
				r, _, _ := batched(t, client, store.BatchOptions{})
				return r
			})
		})
	}
}

// TestBatchConcurrentCreates: many requests at once, on distinct ids and on
// the same ids with the same or another plant, answer exactly as one round
// trip each would: one Created per id, Replayed for the same plant, a
// conflict for another; reads see what was stored; and the commands did
// share pipelines.
func TestBatchConcurrentCreates(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, store.RedisOptions{Addrs: []string{srv.Addr}})
	r, _, reg := batched(t, client, store.BatchOptions{InFlight: 2})
	ctx := context.Background()

	const ids, perID = 200, 6 // each id: 4 × the same plant, 2 × another
	var created, replayed, conflicts [ids]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, ids*perID)
	for k := range perID {
		for id := range int64(ids) {
			wg.Go(func() {
				name := fmt.Sprintf("plant-%d", id)
				if k >= 4 {
					name += "-other"
				}
				_, outcome, err := r.Create(ctx, plant.Plant{ID: id, Name: name})
				switch {
				case errors.Is(err, plant.ErrConflict):
					conflicts[id].Add(1)
				case err != nil:
					errs <- fmt.Errorf("create %d: %w", id, err)
				case outcome == plant.Created:
					created[id].Add(1)
				case outcome == plant.Replayed:
					replayed[id].Add(1)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for id := range int64(ids) {
		stored, err := r.Get(ctx, id)
		if err != nil {
			t.Fatalf("get %d: %v", id, err)
		}
		// The first create of the id decided the plant: the others with
		// the same name replay it, the others conflict.
		same := int32(4)
		if stored.Name != fmt.Sprintf("plant-%d", id) {
			same = 2
		}
		if created[id].Load() != 1 || replayed[id].Load() != same-1 || conflicts[id].Load() != perID-same {
			t.Errorf("id %d (stored %q): %d created, %d replayed, %d conflicts; want 1, %d, %d",
				id, stored.Name, created[id].Load(), replayed[id].Load(), conflicts[id].Load(), same-1, perID-same)
		}
		if n, err := srv.Client().Exists(ctx, store.PlantKey("plantstore:", id)).Result(); err != nil || n != 1 {
			t.Fatalf("plant %d not stored: %d, %v", id, n, err)
		}
	}
	if _, err := r.Get(ctx, ids); !errors.Is(err, plant.ErrNotFound) {
		t.Errorf("get of a missing id: %v, want ErrNotFound", err)
	}
	if n, sum := batchSizes(t, reg); sum != ids*perID+ids+1 || n == 0 {
		t.Errorf("%d pipelines of %v commands in all, want the %d commands", n, sum, ids*perID+ids+1)
	}
}

// TestBatchCoalesces: commands queued while a pipeline is in flight leave
// together, in one pipeline, and each gets its own answer.
func TestBatchCoalesces(t *testing.T) {
	srv, r, b, reg, starts := oneInFlight(t)
	ctx := context.Background()

	const n = 20
	outcomes := make([]error, n+1)
	rest := make([]func(), n)
	for i := range rest {
		id := int64(i + 1)
		rest[i] = func() {
			if i%2 == 0 {
				_, outcomes[id] = r.Get(ctx, 1000)
				return
			}
			_, outcome, err := r.Create(ctx, plant.Plant{ID: id, Name: "p"})
			if err == nil && outcome != plant.Created {
				err = fmt.Errorf("outcome %v, want Created", outcome)
			}
			outcomes[id] = err
		}
	}
	wg := stallBatch(t, srv, b, starts, func() {
		_, _, outcomes[0] = r.Create(ctx, plant.Plant{ID: 0, Name: "first"})
	}, rest)
	srv.Resume()
	if got := <-starts; got != n {
		t.Errorf("the queued commands left in a pipeline of %d, want %d", got, n)
	}
	wg.Wait()
	for id, err := range outcomes {
		if err != nil {
			t.Errorf("command %d: %v", id, err)
		}
	}
	if count, sum := batchSizes(t, reg); count != 3 || sum != n+2 {
		t.Errorf("%d pipelines of %v commands, want 3 of %d", count, sum, n+2)
	}
}

// TestBatchDeadline: a request whose deadline passes while its pipeline is
// stuck (Redis stopped) returns at its deadline, unavailable; a request
// cancelled while queued returns at once and its command is never sent.
func TestBatchDeadline(t *testing.T) {
	srv, r, b, _, starts := oneInFlight(t)
	ctx := context.Background()

	const deadline = 300 * time.Millisecond
	var stuckErr, cancelledErr error
	var stuckTook, cancelledTook time.Duration
	queued, cancel := context.WithCancel(ctx)
	defer cancel()
	cancelled := make(chan struct{})
	wg := stallBatch(t, srv, b, starts, func() {
		dctx, dcancel := context.WithTimeout(ctx, deadline)
		defer dcancel()
		start := time.Now()
		_, _, stuckErr = r.Create(dctx, plant.Plant{ID: 1, Name: "stuck"})
		stuckTook = time.Since(start)
	}, []func(){func() {
		_, _, cancelledErr = r.Create(queued, plant.Plant{ID: 2, Name: "cancelled"})
		close(cancelled)
	}})
	start := time.Now()
	cancel()
	<-cancelled
	cancelledTook = time.Since(start)
	wg.Wait()
	srv.Resume()

	// The deadline ends the wait, or the pipeline's read a moment before:
	// either way the deadline's error, unavailable.
	if !errors.Is(stuckErr, plant.ErrUnavailable) ||
		!errors.Is(stuckErr, context.DeadlineExceeded) && !errors.Is(stuckErr, os.ErrDeadlineExceeded) {
		t.Errorf("create past its deadline: %v, want ErrUnavailable and the deadline", stuckErr)
	}
	if stuckTook > deadline+time.Second {
		t.Errorf("create with a %v deadline returned after %v", deadline, stuckTook)
	}
	if !errors.Is(cancelledErr, plant.ErrUnavailable) || !errors.Is(cancelledErr, context.Canceled) {
		t.Errorf("cancelled create: %v, want ErrUnavailable and context.Canceled", cancelledErr)
	}
	if cancelledTook > time.Second {
		t.Errorf("cancelled create returned %v after its cancellation", cancelledTook)
	}
	// A later command is sent after the cancelled one.
	if _, _, err := r.Create(ctx, plant.Plant{ID: 3, Name: "after"}); err != nil {
		t.Fatal(err)
	}
	if n, err := srv.Client().Exists(ctx, store.PlantKey("plantstore:", 2)).Result(); err != nil || n != 0 {
		t.Errorf("the create cancelled before it was sent stored its plant (%d, %v)", n, err)
	}
}

// TestBatchNoScript: a node without the scripts (SCRIPT FLUSH, as after a
// restart or a failover) answers batched creates and deletes NOSCRIPT; they
// are run again with EVAL, which loads the scripts, and succeed.
func TestBatchNoScript(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, store.RedisOptions{Addrs: []string{srv.Addr}})
	r, _, _ := batched(t, client, store.BatchOptions{})
	ctx := context.Background()
	run := func(what string, op func(id int64) error) {
		t.Helper()
		if err := srv.Client().ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 32)
		for i := range errs {
			wg.Go(func() { errs[i] = op(int64(i)) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("%s %d after SCRIPT FLUSH: %v", what, i, err)
			}
		}
	}
	run("create", func(id int64) error {
		_, outcome, err := r.Create(ctx, plant.Plant{ID: id, Name: "p"})
		if err == nil && outcome != plant.Created {
			err = fmt.Errorf("outcome %v", outcome)
		}
		return err
	})
	run("delete", func(id int64) error { return r.Delete(ctx, id) })
	if n, err := srv.Client().DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("%d keys (%v) after deleting every plant", n, err)
	}
}

// TestBatchRedisKilled: Redis killed under batched load: every failure is
// unavailable (503), creates succeed again once it is back, and with AOF
// and appendfsync always no acknowledged plant is lost.
func TestBatchRedisKilled(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	client := newClient(t, store.RedisOptions{Addrs: []string{srv.Addr}})
	r, _, _ := batched(t, client, store.BatchOptions{})

	var next atomic.Int64
	var mu sync.Mutex
	var acked []int64
	var unavailable, afterRestart atomic.Int64
	var restarted atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := next.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, _, err := r.Create(ctx, plant.Plant{ID: id, Name: "p"})
				cancel()
				switch {
				case err == nil:
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
					if restarted.Load() {
						afterRestart.Add(1)
					}
				case errors.Is(err, plant.ErrUnavailable):
					unavailable.Add(1)
					time.Sleep(5 * time.Millisecond)
				default:
					t.Errorf("create %d: %v, want success or ErrUnavailable", id, err)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	srv.Stop()
	time.Sleep(500 * time.Millisecond)
	srv.Restart()
	restarted.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for afterRestart.Load() < 100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if unavailable.Load() == 0 {
		t.Error("no create was unavailable while Redis was down")
	}
	if afterRestart.Load() < 100 {
		t.Errorf("%d creates succeeded within 10 s of Redis's return", afterRestart.Load())
	}
	ctx := context.Background()
	lost := 0
	for _, id := range acked {
		if n, err := srv.Client().Exists(ctx, store.PlantKey("plantstore:", id)).Result(); err != nil || n != 1 {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged plants lost", lost, len(acked))
	}
	t.Logf("%d acknowledged, %d unavailable", len(acked), unavailable.Load())
}

// TestBatchClose: once the batcher is closed (the service stopping), a
// command answers unavailable at once instead of waiting for a sender.
func TestBatchClose(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, store.RedisOptions{Addrs: []string{srv.Addr}})
	r, b, _ := batched(t, client, store.BatchOptions{})
	ctx := context.Background()
	if _, _, err := r.Create(ctx, plant.Plant{ID: 1, Name: "p"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, 1); !errors.Is(err, plant.ErrUnavailable) || !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("get after Close: %v, want ErrUnavailable and redis.ErrClosed", err)
	}
}

// TestBatchCancellations: requests whose contexts end at every moment of
// their way through the batcher (queued, handed a place to send, in a
// pipeline), while Redis stalls now and then, all return by their deadline
// with an answer or their context's error; and the batcher is left with
// no send in flight and no queue, so that it still serves, and closes.
func TestBatchCancellations(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, store.RedisOptions{Addrs: []string{srv.Addr}})
	r, b, _ := batched(t, client, store.BatchOptions{InFlight: 2})
	ctx := context.Background()

	stop := make(chan struct{})
	var stalls sync.WaitGroup
	stalls.Go(func() { // Redis stopped 20 ms of every 50
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			srv.Pause()
			time.Sleep(20 * time.Millisecond)
			srv.Resume()
		}
	})
	const requests = 6000
	var wg sync.WaitGroup
	var answered, ended atomic.Int64
	late := make(chan string, requests)
	sem := make(chan struct{}, 64) // requests at once
	for i := range requests {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// Deadlines of 0 to 5 ms, half of them cancelled earlier still.
			life := time.Duration(i%6) * time.Millisecond
			rctx, cancel := context.WithTimeout(ctx, life)
			defer cancel()
			if i%2 == 0 {
				time.AfterFunc(life/2, cancel)
			}
			start := time.Now()
			var err error
			if i%3 == 0 {
				_, err = r.Get(rctx, int64(i))
			} else {
				_, _, err = r.Create(rctx, plant.Plant{ID: int64(i), Name: "p"})
			}
			switch {
			case err == nil, errors.Is(err, plant.ErrNotFound):
				answered.Add(1)
			case errors.Is(err, plant.ErrUnavailable) && (errors.Is(err, context.Canceled) ||
				errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)):
				ended.Add(1)
			default:
				t.Errorf("request %d: %v", i, err)
			}
			// A request that sends a pipeline waits for it, at most until
			// the latest deadline in it: 5 ms, and Redis's stall.
			if took := time.Since(start); took > life+time.Second {
				late <- fmt.Sprintf("request %d with a %v deadline took %v", i, life, took)
			}
		})
	}
	wg.Wait()
	close(stop)
	stalls.Wait()
	srv.Resume()
	close(late)
	for msg := range late {
		t.Error(msg)
	}
	t.Logf("%d answered, %d ended by their contexts", answered.Load(), ended.Load())
	if ended.Load() == 0 || answered.Load() == 0 {
		t.Errorf("%d answered and %d ended: the test should see both", answered.Load(), ended.Load())
	}
	if sending, queued := store.BatchSending(b), store.BatchQueued(b); sending != 0 || queued != 0 {
		t.Fatalf("after every request returned: %d sends in flight, %d queued; want none", sending, queued)
	}
	if _, _, err := r.Create(ctx, plant.Plant{ID: 1 << 40, Name: "after"}); err != nil {
		t.Fatalf("create after the cancellations: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return: a send's place was never given back")
	}
}

// TestBatchInFlightDefault: unless told, a Batcher sends up to
// DefaultBatchInFlight pipelines of creates at once and
// DefaultBatchReadInFlight of reads, or as many as the client's pool holds
// connections when that is fewer; the next commands queue.
func TestBatchInFlightDefault(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	if _, _, err := store.NewRedis(newClient(t, store.RedisOptions{Addrs: []string{srv.Addr}}), "plantstore:").
		Create(ctx, plant.Plant{ID: 1000, Name: "read"}); err != nil {
		t.Fatal(err)
	}
	create := func(r *store.Redis, i int) error {
		_, _, err := r.Create(ctx, plant.Plant{ID: int64(i), Name: "p"})
		return err
	}
	read := func(r *store.Redis, _ int) error {
		_, err := r.Get(ctx, 1000)
		return err
	}
	for _, tc := range []struct {
		name     string
		poolSize int
		op       func(*store.Redis, int) error
		want     int
	}{
		{name: "creates, pool of 3", poolSize: 3, op: create, want: 3},
		{name: "creates, pool of 40", poolSize: 40, op: create, want: store.DefaultBatchInFlight},
		{name: "reads, pool of 3", poolSize: 3, op: read, want: 3},
		{name: "reads, pool of 40", poolSize: 40, op: read, want: store.DefaultBatchReadInFlight},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := newClient(t, store.RedisOptions{Addrs: []string{srv.Addr}, PoolSize: tc.poolSize})
			r, b, _ := batched(t, client, store.BatchOptions{})
			const queued = 2
			var wg sync.WaitGroup
			errs := make(chan error, tc.want+queued)
			srv.Pause()
			for i := range tc.want + queued {
				wg.Go(func() {
					if err := tc.op(r, i); err != nil {
						errs <- err
					}
				})
			}
			deadline := time.Now().Add(10 * time.Second)
			for store.BatchSending(b) < tc.want || store.BatchQueued(b) < queued {
				if time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			sending, waiting := store.BatchSending(b), store.BatchQueued(b)
			srv.Resume()
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if sending != tc.want || waiting != queued {
				t.Errorf("%d sending and %d queued, want %d and %d", sending, waiting, tc.want, queued)
			}
		})
	}
}

// TestBatchReadsQueueFirst: once ReadInFlight pipelines are in flight a read
// queues, while a create is still sent at once, up to InFlight; the queued
// read is answered with the next pipeline.
func TestBatchReadsQueueFirst(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, store.RedisOptions{Addrs: []string{srv.Addr}})
	r, b, _ := batched(t, client, store.BatchOptions{InFlight: 3, ReadInFlight: 1})
	ctx := context.Background()
	if _, _, err := r.Create(ctx, plant.Plant{ID: 1000, Name: "read"}); err != nil {
		t.Fatal(err)
	}
	waitFor := func(sending, queued int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for store.BatchSending(b) != sending || store.BatchQueued(b) != queued {
			if time.Now().After(deadline) {
				srv.Resume()
				t.Fatalf("%d sending and %d queued, want %d and %d",
					store.BatchSending(b), store.BatchQueued(b), sending, queued)
			}
			time.Sleep(time.Millisecond)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	read := func() {
		if p, err := r.Get(ctx, 1000); err != nil || p.Name != "read" {
			errs <- fmt.Errorf("read: %+v, %v", p, err)
		}
	}
	create := func(id int64) func() {
		return func() {
			if _, outcome, err := r.Create(ctx, plant.Plant{ID: id, Name: "p"}); err != nil || outcome != plant.Created {
				errs <- fmt.Errorf("create %d: %v, %v", id, outcome, err)
			}
		}
	}
	srv.Pause()
	wg.Go(read)
	waitFor(1, 0)
	wg.Go(read)
	waitFor(1, 1) // past ReadInFlight: queued
	wg.Go(create(1))
	waitFor(2, 1) // below InFlight: sent at once, past the queued read
	wg.Go(create(2))
	waitFor(3, 1)
	wg.Go(create(3))
	waitFor(3, 2) // InFlight reached: queued too
	srv.Resume()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitFor(0, 0)
}
