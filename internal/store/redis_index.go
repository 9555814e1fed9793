package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/plant"
)

// Shards is the number of listing indexes, fixed for the life of a store: a
// plant's shard is its id modulo Shards, and a page reads every shard's index
// once. Sixteen spreads a store over sixteen Cluster slots (and so up to
// sixteen masters) while a page of 100 reads at most 16 × 101 index entries.
const Shards = 16

// The key layout (docs/storage.md). Every key of shard s carries the hash
// tag shardTags[s], so a plant and its shard's index share one slot:
//
//	<prefix>plants:{s07.1}:<id>     the plant's JSON, as 1.0.0 stored it
//	<prefix>plants:{s07.1}:index    sorted set, every score 0, members IndexMember(id)
//
// Tag s hashes into the s-th sixteenth of the 16384 Cluster slots, so that a
// Cluster whose masters own equal runs of slots (as redis-cli --cluster
// create makes them) holds an even share of the shards: 5/6/5 on three
// masters, 4 each on four.
var shardTags = [Shards]string{
	"{s00.22}", "{s01.21}", "{s02.11}", "{s03.12}", "{s04.41}", "{s05.42}", "{s06.2}", "{s07.1}",
	"{s08.0}", "{s09.3}", "{s10.22}", "{s11.21}", "{s12.2}", "{s13.1}", "{s14.41}", "{s15.42}",
}

func ShardOf(id int64) int { return int(uint64(id) % Shards) }

func shardTag(id int64) string { return shardTags[ShardOf(id)] }

// PlantKey is the Redis key of a plant id under prefix: the one place that
// names it, for the tests and tools that look into a store.
func PlantKey(prefix string, id int64) string {
	// Spelt in one buffer: one allocation (the string) where concatenating
	// FormatInt's string took two, on every request.
	var buf [64]byte
	b := append(buf[:0], prefix...)
	b = append(b, "plants:"...)
	b = append(b, shardTag(id)...)
	b = append(b, ':')
	b = strconv.AppendInt(b, id, 10)
	return string(b)
}

// LegacyPlantKey is where version 1.0.0 stored a plant (see MigrateLegacy).
func LegacyPlantKey(prefix string, id int64) string {
	return prefix + "plant:{" + strconv.FormatInt(id, 10) + "}"
}

// Key is the Redis key of a plant id.
func (r *Redis) Key(id int64) string { return PlantKey(r.prefix, id) }

// IndexKey is the Redis key of the listing index of shard s.
func (r *Redis) IndexKey(s int) string { return r.indexKeys[s] }

// PlantIndexKey is the Redis key of the listing index that holds id.
func PlantIndexKey(prefix string, id int64) string {
	return prefix + "plants:" + shardTag(id) + ":index"
}

func (r *Redis) createKeys(id int64) []string {
	return []string{r.Key(id), r.indexKeys[ShardOf(id)]}
}

// IndexMember encodes id so that byte order is int64 order: the sign bit
// flipped, as 16 lower-case hex digits. Sorted-set scores are doubles and
// cannot tell 2^53 from 2^53+1, so the index orders members by their bytes
// (ZRANGE BYLEX, every score 0) instead.
func IndexMember(id int64) string {
	const digits = "0123456789abcdef"
	u := uint64(id) ^ (1 << 63)
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[u&0xf]
		u >>= 4
	}
	return string(b[:])
}

// firstMerged returns the first n strings, in byte order, of lists, each in
// byte order already; it consumes lists. Picking the least head of 16 lists
// n times compares 16n strings; sorting all 16(n+1) of them took a tenth of
// the service's CPU on pages of 20, and more on pages of 100.
func firstMerged(lists [][]string, n int) []string {
	out := make([]string, 0, n)
	for len(out) < n {
		least := -1
		for i, l := range lists {
			if len(l) > 0 && (least < 0 || l[0] < lists[least][0]) {
				least = i
			}
		}
		if least < 0 {
			break
		}
		out = append(out, lists[least][0])
		lists[least] = lists[least][1:]
	}
	return out
}

// ParseIndexMember is IndexMember's inverse.
func ParseIndexMember(m string) (int64, error) {
	if len(m) != 16 {
		return 0, fmt.Errorf("index member %q: not 16 hex digits", m)
	}
	u, err := strconv.ParseUint(m, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("index member %q: %w", m, err)
	}
	return int64(u ^ (1 << 63)), nil
}

// createScript stores a plant and indexes it unless its key exists, and
// returns the stored JSON then, 0 when it created (createdReply).
//
// With ARGV[3] (createEventScript: ARGV[4]) set to "1", a replay, the key
// holding exactly ARGV[1], also writes it again in the same atomic step, so
// that a WAIT on the same connection covers the plant as stored now
// (WaitForReplicas): the write can only repeat the value this script has
// just read, never put back one that another create has replaced since. The
// DEL comes first: on a full store Redis refuses a script's first command
// that may grow the data (SET), but lets a script that has written finish,
// so a replay keeps working there (see fanOutScript).
//
// Not nil for a create, the common answer: go-redis treats a nil reply as an
// error (redis.Nil), and a pipeline's error runs its retry classification,
// a dozen errors.As each allocating, on every create.
var createScript = redis.NewScript(createLua(3, ""))

// createEventScript is createScript that also records the plant.created
// event (ARGV[3], its envelope) in the shard's outbox stream (KEYS[3]),
// beside the plant as stored: the event exists exactly when the plant was
// created. A replay or a conflict records nothing.
var createEventScript = redis.NewScript(createLua(4, "redis.call('XADD', KEYS[3], '*', 'e', ARGV[3], 'p', ARGV[1])\n"))

// createLua is a create script whose replay flag is ARGV[flag] and which
// runs also after storing and indexing the plant.
func createLua(flag int, also string) string {
	return fmt.Sprintf(`local old = redis.call('GET', KEYS[1])
if old then
  if old == ARGV[1] and ARGV[%d] == '1' then
    redis.call('DEL', KEYS[1])
    redis.call('SET', KEYS[1], old)
  end
  return old
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
%sreturn 0
`, flag, also)
}

// deleteEventScript is deleteScript that also records the plant.deleted
// event (ARGV[2]) with the plant it removed.
var deleteEventScript = redis.NewScript(`
local old = redis.call('GET', KEYS[1])
if not old then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], '*', 'e', ARGV[2], 'p', old)
return 1
`)

// deleteScript removes a plant and its index entry; 1 if it was there.
var deleteScript = redis.NewScript(`
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)

// createdReply reads a create script's answer: created, or the JSON of the
// plant already stored under the key.
func createdReply(cmd *redis.Cmd) (old string, created bool, err error) {
	v, err := cmd.Result()
	if err != nil {
		return "", false, err
	}
	switch v := v.(type) {
	case int64:
		if v == 0 {
			return "", true, nil
		}
	case string:
		return v, false, nil
	}
	return "", false, fmt.Errorf("create script answered %v (%T)", v, v)
}

func unknownScript[C redis.Cmder](cmds []C) bool {
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			return true
		}
	}
	return false
}

// queueScript queues script on pipe: EVALSHA, or with eval the whole
// script (EVAL, which loads it too). Not Script.Load on a pipeline: it
// would take the reply it has not had yet, an empty hash, for the script's.
func queueScript(ctx context.Context, pipe redis.Pipeliner, script *redis.Script, eval bool, keys []string, args []any) *redis.Cmd {
	if eval {
		return script.Eval(ctx, pipe, keys, args...)
	}
	return script.EvalSha(ctx, pipe, keys, args...)
}

// Get implements plant.Repository.
func (r *Redis) Get(ctx context.Context, id int64) (plant.Plant, error) {
	if r.acks > 0 {
		return r.getAcknowledged(ctx, id)
	}
	v, err := r.get(ctx, r.Key(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return plant.Plant{}, fmt.Errorf("id %d: %w", id, plant.ErrNotFound)
	}
	if err != nil {
		return plant.Plant{}, classify(fmt.Errorf("reading plant %d: %w", id, err))
	}
	return decodePlant(id, v)
}

// getAcknowledged is Get when replicas must acknowledge (see
// WaitForReplicas): GET and WAIT in one pipeline on one connection to the
// master, so the answer, the plant or 404, stands only once the replicas hold
// what the master held when it read; otherwise 503.
func (r *Redis) getAcknowledged(ctx context.Context, id int64) (plant.Plant, error) {
	key := r.Key(id)
	var get *redis.StringCmd
	err := r.pipelineWait(ctx, key, func(pipe redis.Pipeliner, _ bool) {
		get = pipe.Get(ctx, key)
	})
	if get == nil { // no connection to the master at all
		return plant.Plant{}, err
	}
	v, getErr := get.Bytes()
	switch {
	case getErr != nil && !errors.Is(getErr, redis.Nil):
		return plant.Plant{}, classify(fmt.Errorf("reading plant %d: %w", id, getErr))
	case err != nil:
		return plant.Plant{}, fmt.Errorf("plant %d read on the master: %w", id, err)
	case getErr != nil:
		return plant.Plant{}, fmt.Errorf("id %d: %w", id, plant.ErrNotFound)
	}
	return decodePlant(id, v)
}

func decodePlant(id int64, v []byte) (plant.Plant, error) {
	var sp storedPlant
	if err := json.Unmarshal(v, &sp); err != nil {
		return plant.Plant{}, fmt.Errorf("decoding stored plant %d: %w", id, err)
	}
	return plant.Plant{ID: id, Name: sp.Name, Tag: sp.Tag}, nil
}

// Delete implements plant.Repository with one script: the plant and its
// index entry go together. A delete whose reply was lost and that go-redis
// retried answers ErrNotFound although it removed the plant; the plant is
// gone either way.
func (r *Redis) Delete(ctx context.Context, id int64) error {
	script, keys, args := deleteScript, r.createKeys(id), []any{IndexMember(id)}
	if r.recording.On() {
		envelope, err := newEventRecord(ctx, EventDeleted, id)
		if err != nil {
			return err
		}
		script, keys, args = deleteEventScript, append(keys, r.EventsKey(ShardOf(id))), append(args, envelope)
	}
	if r.acks > 0 {
		return r.deleteAcknowledged(ctx, id, script, keys, args)
	}
	n, err := r.runScript(ctx, script, keys, args).Int()
	if err != nil {
		return classify(fmt.Errorf("deleting plant %d: %w", id, err))
	}
	if n == 0 {
		return fmt.Errorf("id %d: %w", id, plant.ErrNotFound)
	}
	return nil
}

// deleteAcknowledged is Delete when replicas must acknowledge (see
// WaitForReplicas): the delete script and WAIT go in one pipeline on one
// connection, so a delete answers done only once the plant's removal, and
// the event the script recorded with it, reached the replicas; otherwise it
// is unavailable (503), the plant maybe deleted on the master, and a retry
// is safe. A missing plant (404) also waits: read on a master cut off from
// its replicas, it may be stale.
func (r *Redis) deleteAcknowledged(ctx context.Context, id int64, script *redis.Script, keys []string, args []any) error {
	var del *redis.Cmd
	err := r.pipelineWait(ctx, keys[0], func(pipe redis.Pipeliner, eval bool) {
		del = queueScript(ctx, pipe, script, eval, keys, args)
	})
	if del == nil { // no connection to the master at all
		return err
	}
	n, delErr := del.Int()
	switch {
	case delErr != nil && redirected([]redis.Cmder{del}):
		return err // the deadline passed while the slot moved
	case delErr != nil:
		return classify(fmt.Errorf("deleting plant %d: %w", id, delErr))
	case err != nil && n == 0:
		return fmt.Errorf("plant %d missing on the master: %w", id, err)
	case err != nil:
		return fmt.Errorf("plant %d deleted on the master: %w", id, err)
	case n == 0:
		return fmt.Errorf("id %d: %w", id, plant.ErrNotFound)
	}
	return nil
}

// List implements plant.Repository in two round trips whatever the size of
// the store: the first asks every shard's index for its next limit+1 ids
// after the cursor (ZRANGE BYLEX, one pipeline), the second reads the plants
// of the limit smallest of them (one MGET per shard, one pipeline). A plant
// deleted between the two is left out of the page: a page never lists a plant
// that is gone, and the walk stays exact because the next page starts after
// the last id chosen, listed or not.
//
// When replicas must acknowledge (WaitForReplicas) the page stands only once
// they hold what the master held when it was read (confirmRead); otherwise
// 503.
func (r *Redis) List(ctx context.Context, after *int64, limit int) (plant.Page, error) {
	client, release := r.readClient()
	defer release()
	page, err := r.list(ctx, client, after, limit)
	if err == nil && r.acks > 0 {
		err = r.confirmRead(ctx, client)
	}
	if err != nil {
		return plant.Page{}, err
	}
	return page, nil
}

// readClient is where a list page reads: with replica acknowledgements and
// one master, a single connection, so that the WAIT after the reads covers
// both round trips on the same server.
func (r *Redis) readClient() (redis.Cmdable, func()) {
	if c, ok := r.client.(*redis.Client); ok && r.acks > 0 {
		conn := c.Conn()
		return conn, func() { _ = conn.Close() }
	}
	return r.client, func() {}
}

// confirmRead waits until r.acks replicas hold what the master (every master
// of a Cluster) had applied when it last answered on client: PING sets the
// connection's wait offset to the master's replication offset, and WAIT waits
// for it.
func (r *Redis) confirmRead(ctx context.Context, client redis.Cmdable) error {
	confirm := func(ctx context.Context, c redis.Cmdable) error {
		var wait *redis.Cmd
		_, _ = c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Ping(ctx)
			wait = pipe.Do(ctx, "wait", r.acks, r.ackTimeout.Milliseconds())
			return nil
		})
		n, err := wait.Int64()
		switch {
		case err != nil:
			return fmt.Errorf("%w: confirming a page of plants: %w", plant.ErrUnavailable, err)
		case n < int64(r.acks):
			return fmt.Errorf("%w: a page of plants read on a master that %d of %d replicas acknowledged within %v: %w", plant.ErrUnavailable, n, r.acks, r.ackTimeout, ErrNotReplicated)
		}
		return nil
	}
	return eachMaster(ctx, client, confirm)
}

// eachMaster runs f on every master of client: each of a Cluster's, in
// parallel, or client itself.
func eachMaster(ctx context.Context, client redis.Cmdable, f func(ctx context.Context, c redis.Cmdable) error) error {
	if cc, ok := client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return f(ctx, c) })
	}
	return f(ctx, client)
}

// list reads a page through client (List).
func (r *Redis) list(ctx context.Context, client redis.Cmdable, after *int64, limit int) (plant.Page, error) {
	start := "-"
	if after != nil {
		start = "(" + IndexMember(*after)
	}
	ranges := make([]*redis.StringSliceCmd, Shards)
	_, err := client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for s := range Shards {
			ranges[s] = pipe.ZRangeArgs(ctx, redis.ZRangeArgs{
				Key: r.IndexKey(s), Start: start, Stop: "+", ByLex: true, Count: int64(limit) + 1,
			})
		}
		return nil
	})
	if err != nil {
		return plant.Page{}, classify(fmt.Errorf("reading the listing indexes: %w", err))
	}
	// Members sort as their ids do (IndexMember), and each shard answered
	// its own in order: the page is the first limit of their merge. Only
	// those are parsed, not the limit+1 that each of the 16 shards answered.
	shards := make([][]string, Shards)
	for s, cmd := range ranges {
		shards[s] = cmd.Val()
	}
	members := firstMerged(shards, limit+1)
	page := plant.Page{More: len(members) > limit}
	members = members[:min(len(members), limit)]
	if len(members) == 0 {
		return page, nil
	}
	ids := make([]int64, len(members))
	for i, m := range members {
		id, err := ParseIndexMember(m)
		if err != nil {
			return plant.Page{}, err
		}
		ids[i] = id
	}
	page.Cursor = ids[len(ids)-1]

	byShard := make([][]int64, Shards)
	for _, id := range ids {
		byShard[ShardOf(id)] = append(byShard[ShardOf(id)], id)
	}
	values := make(map[int64]*redis.SliceCmd, Shards)
	_, err = client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for s, shardIDs := range byShard {
			if len(shardIDs) == 0 {
				continue
			}
			keys := make([]string, len(shardIDs))
			for i, id := range shardIDs {
				keys[i] = r.Key(id)
			}
			values[int64(s)] = pipe.MGet(ctx, keys...)
		}
		return nil
	})
	if err != nil {
		return plant.Page{}, classify(fmt.Errorf("reading a page of plants: %w", err))
	}
	found := make(map[int64]string, len(ids))
	for s, cmd := range values {
		for i, v := range cmd.Val() {
			if str, ok := v.(string); ok {
				found[byShard[s][i]] = str
			}
		}
	}
	page.Plants = make([]plant.Plant, 0, len(found))
	for _, id := range ids {
		v, ok := found[id]
		if !ok {
			continue // deleted since the index was read
		}
		p, err := decodePlant(id, []byte(v))
		if err != nil {
			return plant.Page{}, err
		}
		page.Plants = append(page.Plants, p)
	}
	return page, nil
}
