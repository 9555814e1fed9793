package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// deadLetterCap bounds the dead letters kept per shard (approximately on
// Redis: XADD MAXLEN ~); past it the oldest go.
const deadLetterCap = 100_000

// The outbox keys of shard s (docs/webhooks.md), all with the shard's hash
// tag, so that the scripts that move an event or a task between them run on
// one node:
//
//	<prefix>plants:{s07.1}:events         stream: recorded events, fields e (envelope) and p (plant)
//	<prefix>plants:{s07.1}:deliveries     sorted set: one member per (event, subscriber) task, scored by due time (ms)
//	<prefix>plants:{s07.1}:dead-letters   stream: tasks given up, field m

// EventsKey is the outbox stream of shard s.
func (r *Redis) EventsKey(s int) string { return eventsKey(r.prefix, s) }

func eventsKey(prefix string, s int) string { return prefix + "plants:" + shardTags[s] + ":events" }

func deliveriesKey(prefix string, s int) string {
	return prefix + "plants:" + shardTags[s] + ":deliveries"
}

func deadLettersKey(prefix string, s int) string {
	return prefix + "plants:" + shardTags[s] + ":dead-letters"
}

// Outbox returns the outbox of the store's keys.
func (r *Redis) Outbox() *RedisOutbox { return NewRedisOutbox(r.client, r.prefix) }

// RedisOutbox is the outbox on Redis: per shard, the events stream the
// create and delete scripts append to, a sorted set of delivery tasks scored
// by when each is due, and a dead-letter stream.
type RedisOutbox struct {
	client redis.UniversalClient
	prefix string
}

// NewRedisOutbox returns the outbox of the keys under prefix.
func NewRedisOutbox(client redis.UniversalClient, prefix string) *RedisOutbox {
	return &RedisOutbox{client: client, prefix: prefix}
}

// fanOutScript moves up to ARGV[2] events of a shard's stream (KEYS[1]) into
// one task each per subscriber key (ARGV[3..]) in its task set (KEYS[2]), due
// at ARGV[1], and deletes them from the stream: one atomic step, so an event
// is either still recorded or has all its tasks.
//
// The outbox scripts write first with a command that cannot grow the data
// (XDEL, ZREM): a Redis over its maxmemory with noeviction refuses a
// script's first command that may grow it (ZADD, XADD), but lets a script
// that has written finish. So events already recorded are still delivered
// on a full store (docs/storage.md).
var fanOutScript = redis.NewScript(`
local entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', ARGV[2])
for _, entry in ipairs(entries) do
  redis.call('XDEL', KEYS[1], entry[1])
  local f, e, p = entry[2], nil, nil
  for i = 1, #f, 2 do
    if f[i] == 'e' then e = f[i+1] elseif f[i] == 'p' then p = f[i+1] end
  end
  if e and p then
    for j = 3, #ARGV do
      redis.call('ZADD', KEYS[2], ARGV[1], '{"s":"' .. ARGV[j] .. '","a":0,"e":' .. e .. ',"p":' .. p .. '}')
    end
  end
end
return #entries
`)

// claimScript leases up to ARGV[2] tasks due at ARGV[1] (ms) until ARGV[3]:
// their score becomes the end of the lease, so no other claim sees them
// until it passes (removed and added again: see fanOutScript).
var claimScript = redis.NewScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, m in ipairs(due) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZADD', KEYS[1], ARGV[3], m)
end
return due
`)

// settleScript settles a claimed task (ARGV[1]) of a task set (KEYS[1]), if
// it is still there: done removes it; retry replaces it by ARGV[3] due at
// ARGV[4]; bury moves ARGV[3] to the dead letters (KEYS[2], at most ARGV[5]
// kept, approximately); defer makes it due at ARGV[4]. The ZREM comes first
// (see fanOutScript).
var settleScript = redis.NewScript(`
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
if ARGV[2] == 'defer' then
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
elseif ARGV[2] == 'retry' then
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
elseif ARGV[2] == 'bury' then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'm', ARGV[3])
end
return 1
`)

// replayScript moves a dead letter (ARGV[1] of KEYS[1]) back to the task set
// (KEYS[2]) as ARGV[2], due at ARGV[3], if it is still there.
var replayScript = redis.NewScript(`
if redis.call('XDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
return 1
`)

var outboxScripts = []*redis.Script{fanOutScript, claimScript, settleScript, replayScript}

// pipelined runs one script call per shard in one pipeline (a Cluster sends
// each to its master), loading the scripts where a node lacks them.
func (o *RedisOutbox) pipelined(ctx context.Context, call func(pipe redis.Pipeliner, s int) *redis.Cmd) ([]*redis.Cmd, error) {
	for attempt := 0; ; attempt++ {
		cmds := make([]*redis.Cmd, Shards)
		_, err := o.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for s := range Shards {
				cmds[s] = call(pipe, s)
			}
			return nil
		})
		if attempt == 0 && unknownScript(cmds) {
			if err := o.loadScripts(ctx); err != nil {
				return nil, classify(fmt.Errorf("loading the outbox scripts: %w", err))
			}
			continue
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			err = classify(err)
		} else {
			err = nil
		}
		return cmds, err
	}
}

func (o *RedisOutbox) loadScripts(ctx context.Context) error {
	return eachMaster(ctx, o.client, func(ctx context.Context, c redis.Cmdable) error {
		for _, s := range outboxScripts {
			if err := s.Load(ctx, c).Err(); err != nil {
				return err
			}
		}
		return nil
	})
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// FanOut implements Outbox.
func (o *RedisOutbox) FanOut(ctx context.Context, subscribers []string, n int) (int, error) {
	if len(subscribers) == 0 {
		return 0, nil
	}
	now := ms(time.Now())
	cmds, err := o.pipelined(ctx, func(pipe redis.Pipeliner, s int) *redis.Cmd {
		args := append([]any{now, n}, anySlice(subscribers)...)
		return fanOutScript.EvalSha(ctx, pipe, []string{eventsKey(o.prefix, s), deliveriesKey(o.prefix, s)}, args...)
	})
	moved := 0
	for _, c := range cmds {
		if v, cerr := c.Int(); cerr == nil {
			moved += v
		}
	}
	if err != nil {
		return moved, fmt.Errorf("fanning out events: %w", err)
	}
	return moved, nil
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Claim implements Outbox. A shard that fails leaves the others' tasks
// claimed and returned, with the error.
func (o *RedisOutbox) Claim(ctx context.Context, now time.Time, n int, lease time.Duration) ([]Task, error) {
	cmds, err := o.pipelined(ctx, func(pipe redis.Pipeliner, s int) *redis.Cmd {
		return claimScript.EvalSha(ctx, pipe, []string{deliveriesKey(o.prefix, s)}, ms(now), n, ms(now.Add(lease)))
	})
	var tasks []Task
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("claiming deliveries: %w", err))
	}
	for s, c := range cmds {
		members, cerr := c.StringSlice()
		if cerr != nil {
			continue
		}
		for _, m := range members {
			t, derr := decodeTask(s, m)
			if derr != nil {
				// Never deliverable: drop it rather than claim it forever.
				o.client.ZRem(ctx, deliveriesKey(o.prefix, s), m)
				errs = append(errs, derr)
				continue
			}
			tasks = append(tasks, t)
		}
	}
	return tasks, errors.Join(errs...)
}

func (o *RedisOutbox) settle(ctx context.Context, t Task, op, next string, at time.Time) error {
	keys := []string{deliveriesKey(o.prefix, t.Shard), deadLettersKey(o.prefix, t.Shard)}
	err := settleScript.Run(ctx, o.client, keys, t.member, op, next, ms(at), deadLetterCap).Err()
	if err != nil {
		return classify(fmt.Errorf("settling delivery of %s (%s): %w", t.Event.ID, op, err))
	}
	return nil
}

// Done implements Outbox.
func (o *RedisOutbox) Done(ctx context.Context, t Task) error {
	return o.settle(ctx, t, "done", "", time.Time{})
}

// Retry implements Outbox.
func (o *RedisOutbox) Retry(ctx context.Context, t Task, cause string, at time.Time) error {
	next, err := t.next(cause)
	if err != nil {
		return err
	}
	return o.settle(ctx, t, "retry", next, at)
}

// Defer implements Outbox.
func (o *RedisOutbox) Defer(ctx context.Context, t Task, at time.Time) error {
	return o.settle(ctx, t, "defer", "", at)
}

// Bury implements Outbox.
func (o *RedisOutbox) Bury(ctx context.Context, t Task, cause string) error {
	last, err := t.next(cause)
	if err != nil {
		return err
	}
	return o.settle(ctx, t, "bury", last, time.Time{})
}

// deadLetterID names entry id of shard s's dead letters: "<shard>-<entry id>".
func deadLetterID(s int, id string) string { return strconv.Itoa(s) + "-" + id }

func parseDeadLetterID(id string) (int, string, error) {
	sh, entry, ok := strings.Cut(id, "-")
	s, err := strconv.Atoi(sh)
	if !ok || err != nil || s < 0 || s >= Shards || entry == "" {
		return 0, "", fmt.Errorf("dead letter id %q: not <shard>-<entry id>", id)
	}
	return s, entry, nil
}

func entryTime(id string) time.Time {
	msPart, _, _ := strings.Cut(id, "-")
	v, _ := strconv.ParseInt(msPart, 10, 64)
	return time.UnixMilli(v)
}

// DeadLetters implements Outbox.
func (o *RedisOutbox) DeadLetters(ctx context.Context, limit int) ([]DeadLetter, error) {
	ranges := make([]*redis.XMessageSliceCmd, Shards)
	_, err := o.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for s := range Shards {
			ranges[s] = pipe.XRangeN(ctx, deadLettersKey(o.prefix, s), "-", "+", int64(limit))
		}
		return nil
	})
	if err != nil {
		return nil, classify(fmt.Errorf("reading the dead letters: %w", err))
	}
	var out []DeadLetter
	for s, c := range ranges {
		for _, msg := range c.Val() {
			m, _ := msg.Values["m"].(string)
			t, err := decodeTask(s, m)
			if err != nil {
				return nil, fmt.Errorf("dead letter %s: %w", deadLetterID(s, msg.ID), err)
			}
			out = append(out, DeadLetter{ID: deadLetterID(s, msg.ID), Failed: entryTime(msg.ID), Task: t})
		}
	}
	slices.SortStableFunc(out, func(a, b DeadLetter) int { return a.Failed.Compare(b.Failed) })
	return out[:min(limit, len(out))], nil
}

// Replay implements Outbox.
func (o *RedisOutbox) Replay(ctx context.Context, ids []string) (int, error) {
	if len(ids) == 0 {
		return o.replayAll(ctx)
	}
	replayed := 0
	for _, id := range ids {
		s, entry, err := parseDeadLetterID(id)
		if err != nil {
			return replayed, err
		}
		msgs, err := o.client.XRangeN(ctx, deadLettersKey(o.prefix, s), entry, entry, 1).Result()
		if err != nil {
			return replayed, classify(fmt.Errorf("reading dead letter %s: %w", id, err))
		}
		if len(msgs) == 0 {
			continue // replayed already, or never there
		}
		n, err := o.replayOne(ctx, s, msgs[0])
		replayed += n
		if err != nil {
			return replayed, err
		}
	}
	return replayed, nil
}

func (o *RedisOutbox) replayAll(ctx context.Context) (int, error) {
	replayed := 0
	for s := range Shards {
		for {
			msgs, err := o.client.XRangeN(ctx, deadLettersKey(o.prefix, s), "-", "+", 100).Result()
			if err != nil {
				return replayed, classify(fmt.Errorf("reading the dead letters: %w", err))
			}
			if len(msgs) == 0 {
				break
			}
			for _, msg := range msgs {
				n, err := o.replayOne(ctx, s, msg)
				replayed += n
				if err != nil {
					return replayed, err
				}
			}
		}
	}
	return replayed, nil
}

func (o *RedisOutbox) replayOne(ctx context.Context, s int, msg redis.XMessage) (int, error) {
	m, _ := msg.Values["m"].(string)
	fresh, err := (Task{member: m}).fresh()
	if err != nil {
		// Unreadable: drop it, or a replay of all would loop on it.
		o.client.XDel(ctx, deadLettersKey(o.prefix, s), msg.ID)
		return 0, fmt.Errorf("dead letter %s: %w", deadLetterID(s, msg.ID), err)
	}
	n, err := replayScript.Run(ctx, o.client, []string{deadLettersKey(o.prefix, s), deliveriesKey(o.prefix, s)},
		msg.ID, fresh, ms(time.Now())).Int()
	if err != nil {
		return 0, classify(fmt.Errorf("replaying dead letter %s: %w", deadLetterID(s, msg.ID), err))
	}
	return n, nil
}

// Stats implements Outbox: one pipeline of five reads per shard.
func (o *RedisOutbox) Stats(ctx context.Context) (OutboxStats, error) {
	type shardCmds struct {
		events, tasks, dead *redis.IntCmd
		first               *redis.XMessageSliceCmd
		due                 *redis.StringSliceCmd
	}
	cmds := make([]shardCmds, Shards)
	_, err := o.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for s := range Shards {
			cmds[s] = shardCmds{
				events: pipe.XLen(ctx, eventsKey(o.prefix, s)),
				tasks:  pipe.ZCard(ctx, deliveriesKey(o.prefix, s)),
				dead:   pipe.XLen(ctx, deadLettersKey(o.prefix, s)),
				first:  pipe.XRangeN(ctx, eventsKey(o.prefix, s), "-", "+", 1),
				due:    pipe.ZRange(ctx, deliveriesKey(o.prefix, s), 0, 0),
			}
		}
		return nil
	})
	if err != nil {
		return OutboxStats{}, classify(fmt.Errorf("reading the outbox sizes: %w", err))
	}
	var st OutboxStats
	for s, c := range cmds {
		st.Events += c.events.Val()
		st.Tasks += c.tasks.Val()
		st.DeadLetters += c.dead.Val()
		if msgs := c.first.Val(); len(msgs) > 0 {
			st.Oldest = earliest(st.Oldest, entryTime(msgs[0].ID))
		}
		if due := c.due.Val(); len(due) > 0 {
			if t, err := decodeTask(s, due[0]); err == nil {
				st.Oldest = earliest(st.Oldest, t.Event.Time)
			}
		}
	}
	return st, nil
}
