package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/plant"
)

// Redis is the production repository; docs/storage.md has its key layout.
// Each plant is one string key holding its JSON, and each of Shards listing
// indexes is a sorted set of the ids of its shard's plants. A plant's key and
// its shard's index share a hash tag, so one script changes both atomically,
// on one node, in a Cluster too.
type Redis struct {
	client redis.UniversalClient
	prefix string
	// acks > 0: a create answers only once that many replicas acknowledged
	// it, waiting at most ackTimeout (see WaitForReplicas).
	acks       int
	ackTimeout time.Duration
	// recording on: the scripts also record each change's event in its
	// shard's outbox stream (RecordEvents).
	recording *Recording
	// batch non-nil: single commands go through it (Batch).
	batch *Batcher
	// indexKeys[s] is IndexKey(s), spelt once rather than on every create.
	indexKeys [Shards]string
}

// NewRedis returns a repository on client whose keys all start with prefix.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	r := &Redis{client: client, prefix: prefix}
	for s := range r.indexKeys {
		r.indexKeys[s] = PlantIndexKey(prefix, int64(s))
	}
	return r
}

// ErrNotReplicated means the plant reached the master but fewer replicas than
// required acknowledged it within the timeout. It always comes wrapped with
// plant.ErrUnavailable (the request answers 503): the plant may be stored,
// and a retry of the same plant replays it, waiting for the replicas again.
var ErrNotReplicated = errors.New("fewer replicas than required acknowledged the write")

// WaitForReplicas makes every create and delete wait until n replicas
// acknowledged it, for at most timeout (n = 0: never wait, the default). The
// timeout must stay below the client's read timeout and the request's
// deadline, or the wait ends as a timeout instead of as an answer.
//
// A create sends the create script and WAIT n timeout in one pipeline, on
// one connection: WAIT counts the replicas that have acknowledged every write
// this connection made, so it covers the script's writes (replicated as their
// effects). When the plant was already stored (a replay), the earlier write
// may never have reached a replica (its request may have answered 503), so
// the script writes the stored value again in the same atomic step that read
// it (createScript) and the same WAIT covers that: a 200, created or
// replayed, means the plant was on the master and n replicas acknowledged it.
// A delete pipelines its script and WAIT the same way (deleteAcknowledged).
// Either script's event, with webhooks on, is one of its writes: a change the
// replicas acknowledged has its event on them too.
//
// Reads wait too: every answer that reports what the master holds (a read,
// a list page, a create's 409, a delete's 404) stands only once n replicas
// have acknowledged everything the master had applied when it answered (WAIT
// on the same connection right after the read: Redis sets a connection's
// wait offset to the master's replication offset after every command, reads
// included, so WAIT returns at once when nothing is pending). A master cut off
// from its replicas thus answers nothing, neither a plant deleted on the
// master promoted beyond the cut, nor one whose create never reached a
// replica; the answer is 503 and a retry is safe.
func (r *Redis) WaitForReplicas(n int, timeout time.Duration) *Redis {
	r.acks, r.ackTimeout = n, timeout
	return r
}

// RecordEvents makes every create and delete record its event in the
// outbox stream of the plant's shard, in the same script, while rec is on
// (docs/webhooks.md). Off, the scripts are 1.0.0's, unchanged.
func (r *Redis) RecordEvents(rec *Recording) *Redis {
	r.recording = rec
	return r
}

// createCall returns the script and the arguments of a create of p: the
// plain script, or with recording on the one that also records the event.
// When replicas must acknowledge, the script also writes a replayed plant
// again (createScript).
func (r *Redis) createCall(ctx context.Context, p plant.Plant, value []byte) (*redis.Script, []string, []any, error) {
	script, keys, args := createScript, r.createKeys(p.ID), []any{value, IndexMember(p.ID)}
	if r.recording.On() {
		envelope, err := newEventRecord(ctx, EventCreated, p.ID)
		if err != nil {
			return nil, nil, nil, err
		}
		script, keys, args = createEventScript, append(keys, r.EventsKey(ShardOf(p.ID))), append(args, envelope)
	}
	if r.acks > 0 {
		args = append(args, "1")
	}
	return script, keys, args, nil
}

type storedPlant struct {
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

// Fill stores the plants plantOf(0) to plantOf(n-1) and indexes them, as
// creates leave them, pipelined and without the create's checks or events:
// for benchmarks and tools that need a large store quickly. It overwrites
// what is there.
func Fill(ctx context.Context, rdb redis.Cmdable, prefix string, n int, plantOf func(i int) plant.Plant) error {
	return fillPipelined(ctx, rdb, n, plantOf, func(pipe redis.Pipeliner, id int64, value []byte) {
		pipe.Set(ctx, PlantKey(prefix, id), value, 0)
		pipe.ZAdd(ctx, PlantIndexKey(prefix, id), redis.Z{Member: IndexMember(id)})
	})
}

// FillLegacy stores the plants plantOf(0) to plantOf(n-1) as version 1.0.0
// did (LegacyPlantKey, no index), pipelined: the store MigrateLegacy moves,
// for benchmarks of the migration. It overwrites what is there.
func FillLegacy(ctx context.Context, rdb redis.Cmdable, prefix string, n int, plantOf func(i int) plant.Plant) error {
	return fillPipelined(ctx, rdb, n, plantOf, func(pipe redis.Pipeliner, id int64, value []byte) {
		pipe.Set(ctx, LegacyPlantKey(prefix, id), value, 0)
	})
}

// fillPipelined queues the writes of each plant, encoded as the service stores it,
// in pipelines of 5000 plants.
func fillPipelined(ctx context.Context, rdb redis.Cmdable, n int, plantOf func(i int) plant.Plant, queue func(pipe redis.Pipeliner, id int64, value []byte)) error {
	const batch = 5000 // plants a pipeline
	for lo := 0; lo < n; lo += batch {
		_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i := lo; i < min(lo+batch, n); i++ {
				p := plantOf(i)
				value, err := json.Marshal(storedPlant{Name: p.Name, Tag: p.Tag})
				if err != nil {
					return fmt.Errorf("encoding plant %d: %w", p.ID, err)
				}
				queue(pipe, p.ID, value)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("filling plants %d to %d of %d: %w", lo, min(lo+batch, n)-1, n, err)
		}
	}
	return nil
}

// Create implements plant.Repository with one script (createScript): it
// stores the plant and indexes it if the key is absent, and returns what was
// there otherwise. A retried script whose first attempt landed sees its own
// value and reports Replayed, which is the right answer.
func (r *Redis) Create(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error) {
	value, err := json.Marshal(storedPlant{Name: p.Name, Tag: p.Tag})
	if err != nil {
		return plant.Plant{}, 0, fmt.Errorf("encoding plant %d: %w", p.ID, err)
	}
	script, keys, args, err := r.createCall(ctx, p, value)
	if err != nil {
		return plant.Plant{}, 0, err
	}
	if r.acks > 0 {
		return r.createAcknowledged(ctx, p, script, keys, args)
	}
	old, created, err := createdReply(r.runScript(ctx, script, keys, args))
	if err != nil {
		return plant.Plant{}, 0, classify(fmt.Errorf("storing plant %d: %w", p.ID, err))
	}
	if created {
		return p, plant.Created, nil
	}
	return r.existing(p, old)
}

// existing compares the plant already stored (old, its JSON) with p: the same
// plant is a replay, another a conflict.
func (r *Redis) existing(p plant.Plant, old string) (plant.Plant, plant.Outcome, error) {
	stored, err := decodePlant(p.ID, []byte(old))
	if err != nil {
		return plant.Plant{}, 0, err
	}
	if !stored.SameContent(p) {
		return stored, 0, fmt.Errorf("id %d: %w", p.ID, plant.ErrConflict)
	}
	return stored, plant.Replayed, nil
}

// createAcknowledged is Create when replicas must acknowledge: see
// WaitForReplicas.
func (r *Redis) createAcknowledged(ctx context.Context, p plant.Plant, script *redis.Script, keys []string, args []any) (plant.Plant, plant.Outcome, error) {
	for {
		var set *redis.Cmd
		err := r.pipelineWait(ctx, keys[0], func(pipe redis.Pipeliner, eval bool) {
			set = queueScript(ctx, pipe, script, eval, keys, args)
		})
		if set == nil { // no connection to the master at all
			return plant.Plant{}, 0, err
		}
		old, created, setErr := createdReply(set)
		switch {
		case created:
			if err != nil {
				return plant.Plant{}, 0, fmt.Errorf("plant %d stored on the master: %w", p.ID, err)
			}
			return p, plant.Created, nil
		case setErr != nil && redirected([]redis.Cmder{set}):
			return plant.Plant{}, 0, err // the deadline passed while the slot moved
		case setErr != nil:
			return plant.Plant{}, 0, classify(fmt.Errorf("storing plant %d: %w", p.ID, setErr))
		}
		stored, outcome, cerr := r.existing(p, old)
		if cerr != nil {
			if err != nil {
				// A conflict read on a master that no replica vouches for
				// now may be stale: cut off, it may hold a plant deleted
				// on the master the Sentinels promoted meanwhile.
				return plant.Plant{}, 0, fmt.Errorf("plant %d conflicts on the master: %w", p.ID, err)
			}
			return stored, outcome, cerr
		}
		if old == string(args[0].([]byte)) {
			// A replay: the script wrote the plant again, and WAIT covered it.
			if err != nil {
				return plant.Plant{}, 0, fmt.Errorf("plant %d already stored on the master: %w", p.ID, err)
			}
			return stored, outcome, nil
		}
		// The same plant in another encoding, which the script does not
		// write again: replay it as it is stored, so that the script does.
		if err := ctx.Err(); err != nil {
			return plant.Plant{}, 0, classify(fmt.Errorf("replaying plant %d: %w", p.ID, err))
		}
		args = slices.Clone(args)
		args[0] = []byte(old)
	}
}

// pipelineWait sends the commands write adds, then WAIT, in one pipeline on
// one connection to the master of key, and checks that enough replicas
// acknowledged. It returns an error only for WAIT's failure or shortfall (the
// caller reads its own commands' results).
//
// go-redis keeps a pipeline on one connection for a single node and Sentinel
// (one *redis.Client), but a Cluster client sends a keyless WAIT to any
// master; so in a Cluster the pipeline goes to the node client of the key's
// master. A MOVED or ASK reply (a slot being resharded) reloads the slot map
// and tries again until the request's deadline; a node that does not know a
// script yet (NOSCRIPT, a new or restarted node) gets the pipeline again
// (nothing of it was written), the scripts sent whole (eval: EVAL, which
// also loads them) on that connection: loaded on another connection of the
// pool, they may reach another server while a failover settles.
func (r *Redis) pipelineWait(ctx context.Context, key string, write func(pipe redis.Pipeliner, eval bool)) error {
	eval := false
	for {
		c, err := r.masterFor(ctx, key)
		if err != nil {
			return classify(fmt.Errorf("finding the master of %s: %w", key, err))
		}
		var wait *redis.Cmd
		cmds, _ := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			write(pipe, eval)
			wait = pipe.Do(ctx, "wait", r.acks, r.ackTimeout.Milliseconds())
			return nil
		})
		if cc, ok := r.client.(*redis.ClusterClient); ok && redirected(cmds) {
			cc.ReloadState(ctx)
			select {
			case <-ctx.Done():
				return classify(fmt.Errorf("slot of %s moving: %w", key, ctx.Err()))
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if unknownScript(cmds) && !eval {
			eval = true
			continue
		}
		n, err := wait.Int64()
		if err != nil {
			// Whatever WAIT failed with, no replica vouches for the write:
			// unavailable, and a retry is safe.
			return fmt.Errorf("%w: waiting for replicas: %w", plant.ErrUnavailable, err)
		}
		if n < int64(r.acks) {
			return fmt.Errorf("%w: %d of %d replicas acknowledged within %v: %w", plant.ErrUnavailable, n, r.acks, r.ackTimeout, ErrNotReplicated)
		}
		return nil
	}
}

// masterFor returns the client whose pipelines reach the master of key on
// one connection.
func (r *Redis) masterFor(ctx context.Context, key string) (redis.Cmdable, error) {
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, key)
	}
	return r.client, nil
}

// redirected reports whether a node answered a command with MOVED or ASK.
func redirected(cmds []redis.Cmder) bool {
	for _, cmd := range cmds {
		var reply redis.Error
		if errors.As(cmd.Err(), &reply) {
			if msg := reply.Error(); strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ") {
				return true
			}
		}
	}
	return false
}

// Ping checks that Redis answers.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		return classify(fmt.Errorf("pinging redis: %w", err))
	}
	return nil
}

// transientReplies are Redis error replies that mean "not now" rather than
// "never": the store is loading, failing over or briefly unable to serve.
// NOSCRIPT reaches a caller only when a node that lacks the scripts (a
// replica just promoted) could not be given them either; UNBLOCKED is a
// blocked WAIT's answer when its master turns replica.
var transientReplies = []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "NOREPLICAS", "NOSCRIPT", "UNBLOCKED"}

// classify marks errors that mean the store is unavailable (network
// failures, timeouts and transient error replies) or full (OOM: over
// maxmemory with noeviction, Redis refuses every command that may grow its
// data, and a script's first such command). Other error replies (a command
// the server does not know, say) are bugs or misconfiguration and stay as
// they are.
func classify(err error) error {
	var reply redis.Error
	if errors.As(err, &reply) {
		msg := reply.Error()
		if strings.HasPrefix(msg, "OOM ") {
			return fmt.Errorf("%w: %w", plant.ErrFull, err)
		}
		for _, prefix := range transientReplies {
			if strings.HasPrefix(msg, prefix) {
				return fmt.Errorf("%w: %w", plant.ErrUnavailable, err)
			}
		}
		return err
	}
	return fmt.Errorf("%w: %w", plant.ErrUnavailable, err)
}
