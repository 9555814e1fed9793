package store_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/longtest"
	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/store/storetest"
)

// ackTimeout is short, so that the tests are. A create refused for want of
// acknowledgements must take at least ackTimeout and answer well before the
// client's read timeout (5 s, newClient): within ackTimeout + slack, the slack
// generous because the 2-core test machine, shared with compilers and other
// test processes, has been seen to starve a goroutine for over a second.
const (
	ackTimeout = 300 * time.Millisecond
	slack      = 2 * time.Second
	// patientAcks is the ack timeout where the replicas must acknowledge:
	// long, so that a starved replica process cannot fail the test.
	patientAcks = 3 * time.Second
)

// commandLog records the names of the commands a client sends, pipelined or
// not.
type commandLog struct {
	mu    sync.Mutex
	names []string
}

func (l *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.add(cmd)
		return next(ctx, cmd)
	}
}
func (l *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			l.add(cmd)
		}
		return next(ctx, cmds)
	}
}
func (l *commandLog) add(cmd redis.Cmder) {
	l.mu.Lock()
	l.names = append(l.names, cmd.Name())
	l.mu.Unlock()
}
func (l *commandLog) sent(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.names, name)
}

func newClient(t *testing.T, o store.RedisOptions) redis.UniversalClient {
	t.Helper()
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 5*time.Second, 5*time.Second, 5*time.Second
	client, err := store.NewRedisClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func create(r *store.Redis, id int64, name string) (plant.Outcome, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, outcome, err := r.Create(ctx, plant.Plant{ID: id, Name: name})
	return outcome, time.Since(start), err
}

// wantNotReplicated checks a create failed for want of acknowledgements:
// unavailable (503), ErrNotReplicated, within the ack timeout plus slack.
func wantNotReplicated(t *testing.T, what string, outcome plant.Outcome, took time.Duration, err error) {
	t.Helper()
	if !errors.Is(err, plant.ErrUnavailable) || !errors.Is(err, store.ErrNotReplicated) {
		t.Fatalf("%s: %v, %v; want ErrUnavailable and ErrNotReplicated", what, outcome, err)
	}
	if took < ackTimeout-10*time.Millisecond || took > ackTimeout+slack {
		t.Fatalf("%s took %v, want the ack timeout %v (plus at most %v of scheduling)", what, took, ackTimeout, slack)
	}
}

// TestRedisReplicaAcks: with a replica acknowledging, a create answers
// Created and the replica holds the plant; with the replica stopped
// (SIGSTOP), creates, replays, conflicts, reads, a delete's 404 and list
// pages fail with ErrNotReplicated within the ack timeout; resumed, they
// answer again.
func TestRedisReplicaAcks(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.StartReplica(t, master)
	var log commandLog
	client := newClient(t, store.RedisOptions{Addrs: []string{master.Addr}})
	client.AddHook(&log)
	r := store.NewRedis(client, "plantstore:").WaitForReplicas(1, ackTimeout)
	patient := store.NewRedis(client, "plantstore:").WaitForReplicas(1, patientAcks)
	ctx := context.Background()

	if outcome, _, err := create(patient, 1, "Monstera"); err != nil || outcome != plant.Created {
		t.Fatalf("Create with a replica = %v, %v; want Created", outcome, err)
	}
	if !log.sent("wait") {
		t.Fatal("no WAIT sent with --redis-min-replica-acks 1")
	}
	// The replica acknowledged, so it holds the plant now.
	if v, err := replica.Client().Get(ctx, r.Key(1)).Result(); err != nil || v != `{"name":"Monstera"}` {
		t.Fatalf("replica has plant 1 = %q, %v", v, err)
	}
	if outcome, _, err := create(patient, 1, "Monstera"); err != nil || outcome != plant.Replayed {
		t.Fatalf("replay with a replica = %v, %v; want Replayed", outcome, err)
	}
	if _, _, err := create(r, 1, "Other"); !errors.Is(err, plant.ErrConflict) {
		t.Fatalf("conflict with a replica = %v; want ErrConflict", err)
	}

	replica.Pause()
	defer replica.Resume()
	outcome, took, err := create(r, 2, "Fern")
	wantNotReplicated(t, "create with the replica stopped", outcome, took, err)
	// The master holds it: a 503 does not say the plant is absent.
	if v, err := master.Client().Get(ctx, r.Key(2)).Result(); err != nil || v != `{"name":"Fern"}` {
		t.Fatalf("master has plant 2 = %q, %v", v, err)
	}
	// A replay must not answer 200 on the strength of an earlier write that
	// no replica acknowledged (plant 2), nor of one that was (plant 1): the
	// replica is stopped now, so neither is being confirmed.
	outcome, took, err = create(r, 2, "Fern")
	wantNotReplicated(t, "replay of an unacknowledged plant", outcome, took, err)
	outcome, took, err = create(r, 1, "Monstera")
	wantNotReplicated(t, "replay with the replica stopped", outcome, took, err)
	// The same plant stored in another encoding (by another writer; by hand
	// here) is replayed as it is stored: the script writes those bytes again,
	// and only the replicas' acknowledgement makes the replay a 200.
	const otherEncoding = `{ "name": "Ivy" }`
	if err := master.Client().Set(ctx, r.Key(3), otherEncoding, 0).Err(); err != nil {
		t.Fatal(err)
	}
	outcome, took, err = create(r, 3, "Ivy")
	wantNotReplicated(t, "replay of a plant stored in another encoding", outcome, took, err)
	// Every answer that reports what the master holds waits for the replica
	// too: read on a master no replica vouches for (cut off, in a real
	// failure), it may be stale. A conflict, a read (found or not), a
	// delete's 404 and a list page answer 503 instead.
	if _, _, err := create(r, 1, "Other"); errors.Is(err, plant.ErrConflict) || !errors.Is(err, store.ErrNotReplicated) {
		t.Fatalf("conflict with the replica stopped = %v; want ErrNotReplicated, not ErrConflict", err)
	}
	for what, read := range map[string]func() error{
		"read of a stored plant":    func() error { _, err := r.Get(ctx, 1); return err },
		"read of a missing plant":   func() error { _, err := r.Get(ctx, 99); return err },
		"delete of a missing plant": func() error { return r.Delete(ctx, 99) },
		"list page":                 func() error { _, err := r.List(ctx, nil, 10); return err },
	} {
		start := time.Now()
		err := read()
		if !errors.Is(err, plant.ErrUnavailable) || !errors.Is(err, store.ErrNotReplicated) || time.Since(start) > ackTimeout+slack {
			t.Fatalf("%s with the replica stopped = %v after %v; want ErrUnavailable and ErrNotReplicated", what, err, time.Since(start))
		}
	}

	replica.Resume()
	redistest.WaitReplicas(t, master, 1, 10*time.Second)
	if p, err := patient.Get(ctx, 1); err != nil || p.Name != "Monstera" {
		t.Fatalf("read with the replica back = %v, %v", p, err)
	}
	if _, err := patient.Get(ctx, 99); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("read of a missing plant with the replica back = %v; want ErrNotFound", err)
	}
	if err := patient.Delete(ctx, 99); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("delete of a missing plant with the replica back = %v; want ErrNotFound", err)
	}
	// Plant 3 was stored by hand, without its index entry: not listed.
	if page, err := patient.List(ctx, nil, 10); err != nil || len(page.Plants) != 2 {
		t.Fatalf("list page with the replica back = %+v, %v; want plants 1 and 2", page, err)
	}
	if _, _, err := create(patient, 1, "Other"); !errors.Is(err, plant.ErrConflict) {
		t.Fatalf("conflict with the replica back = %v; want ErrConflict", err)
	}
	if outcome, _, err := create(patient, 2, "Fern"); err != nil || outcome != plant.Replayed {
		t.Fatalf("retry after the replica came back = %v, %v; want Replayed", outcome, err)
	}
	if v, err := replica.Client().Get(ctx, r.Key(2)).Result(); err != nil || v != `{"name":"Fern"}` {
		t.Fatalf("replica has plant 2 = %q, %v", v, err)
	}
	// SETs on the master, the scripts' included: the replay must write the
	// plant again (one SET), or its WAIT covered nothing of it.
	setCalls := func() int {
		m := regexp.MustCompile(`cmdstat_set:calls=(\d+)`).FindStringSubmatch(master.Client().Info(ctx, "commandstats").Val())
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	sets := setCalls()
	if outcome, _, err := create(patient, 3, "Ivy"); err != nil || outcome != plant.Replayed {
		t.Fatalf("replay of a plant stored in another encoding, the replica back = %v, %v; want Replayed", outcome, err)
	}
	if n := setCalls() - sets; n != 1 {
		t.Fatalf("the replay of a plant stored in another encoding made %d SETs on the master; want 1, the plant written again for WAIT to cover", n)
	}
	if v, err := replica.Client().Get(ctx, r.Key(3)).Result(); err != nil || v != otherEncoding {
		t.Fatalf("replica has plant 3 = %q, %v; want it as stored, %q", v, err, otherEncoding)
	}
}

// TestRedisReplicaAcksOff: without the option no WAIT is sent, and a create
// answers at once even with the only replica stopped.
func TestRedisReplicaAcksOff(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.StartReplica(t, master)
	var log commandLog
	client := newClient(t, store.RedisOptions{Addrs: []string{master.Addr}})
	client.AddHook(&log)
	r := store.NewRedis(client, "plantstore:").WaitForReplicas(0, ackTimeout)
	replica.Pause()
	defer replica.Resume()
	for i := range int64(5) {
		if outcome, _, err := create(r, i, "x"); err != nil || outcome != plant.Created {
			t.Fatalf("Create = %v, %v; want Created", outcome, err)
		}
	}
	if outcome, _, err := create(r, 1, "x"); err != nil || outcome != plant.Replayed {
		t.Fatalf("replay = %v, %v", outcome, err)
	}
	if log.sent("wait") {
		t.Fatal("WAIT sent with --redis-min-replica-acks 0")
	}
}

// TestRedisReplicaAcksConformance: the option keeps every promise of the
// repository contract.
func TestRedisReplicaAcksConformance(t *testing.T) {
	master := redistest.Start(t)
	redistest.StartReplica(t, master)
	storetest.Run(t, func(t *testing.T) storetest.Repository {
		if err := master.Client().FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		// Generous timeouts: the suite's 200 concurrent creates on a loaded
		// 2-core machine must not fail for slowness; the option's own
		// deadlines are TestRedisReplicaAcks's business.
		client, err := store.NewRedisClient(store.RedisOptions{Addrs: []string{master.Addr},
			DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.Close() })
		return store.NewRedis(client, "plantstore:").WaitForReplicas(1, 5*time.Second)
	})
}

// TestRedisReplicaAcksSentinel: through the Sentinel (failover) client the
// SET and the WAIT share a connection too: acknowledged with the replica up,
// ErrNotReplicated with it stopped.
func TestRedisReplicaAcksSentinel(t *testing.T) {
	longtest.Mark(t, "several processes or Redis servers")
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	client := newClient(t, store.RedisOptions{Addrs: g.SentinelAddrs(), MasterName: g.MasterName})
	r := store.NewRedis(client, "plantstore:").WaitForReplicas(1, ackTimeout)
	patient := store.NewRedis(client, "plantstore:").WaitForReplicas(1, patientAcks)
	if outcome, _, err := create(patient, 1, "x"); err != nil || outcome != plant.Created {
		t.Fatalf("Create through Sentinel = %v, %v; want Created", outcome, err)
	}
	g.Servers[1].Pause()
	defer g.Servers[1].Resume()
	outcome, took, err := create(r, 2, "y")
	wantNotReplicated(t, "create through Sentinel with the replica stopped", outcome, took, err)
}

// TestRedisReplicaAcksCluster: in a Cluster the WAIT must reach the master of
// the plant's slot on the SET's connection (go-redis would send a keyless
// WAIT to any master). Only the first master has a replica, so creates whose
// slot it serves are acknowledged and all others fail, every time.
func TestRedisReplicaAcksCluster(t *testing.T) {
	longtest.Mark(t, "several processes or Redis servers")
	c := redistest.StartCluster(t, 3)
	c.AddReplica(c.Masters[0])
	client := newClient(t, store.RedisOptions{Addrs: c.Addrs()})
	r := store.NewRedis(client, "plantstore:").WaitForReplicas(1, ackTimeout)
	patient := store.NewRedis(client, "plantstore:").WaitForReplicas(1, patientAcks)
	ctx := context.Background()
	node := c.Masters[0].Client()
	var acked, refused int
	for id := int64(0); id < 12; id++ {
		slot, err := node.ClusterKeySlot(ctx, r.Key(id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		master, err := c.MasterOfSlot(ctx, int(slot))
		if err != nil {
			t.Fatal(err)
		}
		if master == c.Masters[0] {
			if outcome, _, err := create(patient, id, "x"); err != nil || outcome != plant.Created {
				t.Fatalf("plant %d on the master with a replica: %v, %v; want Created", id, outcome, err)
			}
			acked++
			continue
		}
		outcome, took, err := create(r, id, "x")
		wantNotReplicated(t, "plant "+strconv.FormatInt(id, 10)+" on a master without replica", outcome, took, err)
		refused++
	}
	if acked == 0 || refused == 0 {
		t.Fatalf("%d acknowledged and %d refused: the ids did not cover both kinds of master", acked, refused)
	}
}

// TestRedisReplicaAcksDelete: with a replica acknowledging, a delete answers
// done and the replica no longer holds the plant, nor lacks the events of
// the create and the delete (recording on: the scripts' own writes); with the
// replica stopped, a delete fails with ErrNotReplicated within the ack
// timeout (the plant gone from the master), and a delete of a missing plant
// answers ErrNotFound whatever the replicas.
func TestRedisReplicaAcksDelete(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.StartReplica(t, master)
	client := newClient(t, store.RedisOptions{Addrs: []string{master.Addr}})
	rec := store.NewRecording()
	rec.Set(true)
	r := store.NewRedis(client, "plantstore:").WaitForReplicas(1, ackTimeout).RecordEvents(rec)
	patient := store.NewRedis(client, "plantstore:").WaitForReplicas(1, patientAcks).RecordEvents(rec)
	ctx := context.Background()
	del := func(r *store.Redis, id int64) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		start := time.Now()
		err := r.Delete(ctx, id)
		return time.Since(start), err
	}

	for _, id := range []int64{1, 2} {
		if outcome, _, err := create(patient, id, "Monstera"); err != nil || outcome != plant.Created {
			t.Fatalf("Create(%d) = %v, %v; want Created", id, outcome, err)
		}
	}
	if _, err := del(patient, 1); err != nil {
		t.Fatalf("Delete with a replica = %v", err)
	}
	// Acknowledged, so the replica has the delete and both events already.
	if n, err := replica.Client().Exists(ctx, r.Key(1)).Result(); err != nil || n != 0 {
		t.Fatalf("replica still has plant 1: %d, %v", n, err)
	}
	if n, err := replica.Client().XLen(ctx, r.EventsKey(1)).Result(); err != nil || n != 2 {
		t.Fatalf("replica's outbox of shard 1 holds %d events (%v), want 2 (created, deleted)", n, err)
	}

	replica.Pause()
	defer replica.Resume()
	took, err := del(r, 2)
	wantNotReplicated(t, "delete with the replica stopped", 0, took, err)
	if n, err := master.Client().Exists(ctx, r.Key(2)).Result(); err != nil || n != 0 {
		t.Fatalf("master still has plant 2 after its unacknowledged delete: %d, %v", n, err)
	}
	// A 404 read on a master no replica vouches for may be stale: 503.
	took, err = del(r, 3)
	wantNotReplicated(t, "delete of a missing plant with the replica stopped", 0, took, err)
	replica.Resume()
	redistest.WaitReplicas(t, master, 1, 10*time.Second)
	if _, err := del(patient, 3); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Delete of a missing plant with the replica back = %v; want ErrNotFound", err)
	}
}

// TestRedisReplicaAcksNoScript: a master without the scripts (SCRIPT FLUSH,
// as a replica just promoted) answers creates and deletes that wait for
// replicas NOSCRIPT once; they are sent again with the script whole (EVAL,
// which loads it) in their pipeline, so on the server that lacked it (loaded
// on another connection, it may reach another server while a failover
// settles).
func TestRedisReplicaAcksNoScript(t *testing.T) {
	master := redistest.Start(t)
	redistest.StartReplica(t, master)
	client := newClient(t, store.RedisOptions{Addrs: []string{master.Addr}})
	var pipes pipelineLog
	client.AddHook(&pipes)
	r := store.NewRedis(client, "plantstore:").WaitForReplicas(1, patientAcks)
	ctx := context.Background()
	for _, op := range []struct {
		name string
		run  func(id int64) error
	}{
		{"create", func(id int64) error {
			outcome, _, err := create(r, id, "Fern")
			if err == nil && outcome != plant.Created {
				err = fmt.Errorf("outcome %v", outcome)
			}
			return err
		}},
		{"delete", func(id int64) error { return r.Delete(ctx, id) }},
	} {
		for id := int64(1); id <= 2; id++ {
			if err := master.Client().ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			pipes.reset()
			if err := op.run(id); err != nil {
				t.Fatalf("%s %d after SCRIPT FLUSH: %v (pipelines %v)", op.name, id, err, pipes.names())
			}
			if got := pipes.names(); len(got) != 2 || !slices.Equal(got[1], []string{"eval", "wait"}) {
				t.Errorf("%s %d after SCRIPT FLUSH sent pipelines %v; want [evalsha wait] answered NOSCRIPT, then [eval wait]", op.name, id, got)
			}
		}
	}
}

// pipelineLog records the command names of each pipeline a client sends,
// but those that set up a new connection.
type pipelineLog struct {
	mu    sync.Mutex
	pipes [][]string
}

func (l *pipelineLog) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (l *pipelineLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (l *pipelineLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, cmd := range cmds {
			names[i] = cmd.Name()
		}
		if names[0] == "client" || names[0] == "hello" { // a new connection's set-up
			return next(ctx, cmds)
		}
		l.mu.Lock()
		l.pipes = append(l.pipes, names)
		l.mu.Unlock()
		return next(ctx, cmds)
	}
}
func (l *pipelineLog) reset() { l.mu.Lock(); l.pipes = nil; l.mu.Unlock() }
func (l *pipelineLog) names() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.pipes)
}

// BenchmarkReadGuard: what the read guard costs. Reads of one stored plant
// from 8 goroutines on a master with one replica, without replica
// acknowledgements (off: GET alone) and with them (on: GET and WAIT in one
// pipeline), while nothing else is written and while a writer creates plants
// without pause (WAIT then waits for the replica's acknowledgement of those
// writes, one round trip to it).
//
//	go test -run '^$' -bench ReadGuard -count 5 ./internal/store/ | benchstat -col /guard -
func BenchmarkReadGuard(b *testing.B) {
	master := redistest.Start(b)
	redistest.StartReplica(b, master)
	ctx := context.Background()
	for _, writes := range []string{"idle", "writing"} {
		for _, guard := range []string{"off", "on"} {
			b.Run("writes="+writes+"/guard="+guard, func(b *testing.B) {
				client, err := store.NewRedisClient(store.RedisOptions{Addrs: []string{master.Addr},
					DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
				if err != nil {
					b.Fatal(err)
				}
				defer client.Close()
				acks := map[string]int{"off": 0, "on": 1}[guard]
				r := store.NewRedis(client, "plantstore:").WaitForReplicas(acks, 500*time.Millisecond)
				if _, _, err := r.Create(ctx, plant.Plant{ID: 1, Name: "Monstera"}); err != nil {
					b.Fatal(err)
				}
				stop := make(chan struct{})
				var writer sync.WaitGroup
				if writes == "writing" {
					writer.Go(func() {
						w := store.NewRedis(client, "plantstore:")
						for id := int64(2); ; id++ {
							select {
							case <-stop:
								return
							default:
							}
							_, _, _ = w.Create(ctx, plant.Plant{ID: id, Name: "Fern"})
						}
					})
				}
				b.SetParallelism(8)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := r.Get(ctx, 1); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				close(stop)
				writer.Wait()
			})
		}
	}
}
