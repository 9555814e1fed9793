package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/plant"
)

// MigrationResult counts what MigrateLegacy did.
type MigrationResult struct {
	// Moved plants were stored and indexed under the 1.1.0 layout; Already
	// were there with the same content (a re-run, or an interrupted one).
	Moved, Already int
	// Conflicts are 1.0.0 plants whose id holds a different plant under the
	// 1.1.0 layout (created through 1.1.0 before the migration ran); their
	// 1.0.0 keys are kept for an operator to decide.
	Conflicts []int64
}

// migrationWorkers is how many plants MigrateLegacy moves at once on each
// master.
const migrationWorkers = 16

// MigrateLegacy moves the plants version 1.0.0 stored (one key
// <prefix>plant:{<id>} each, see LegacyPlantKey) into the 1.1.0 layout: each
// is created through the same script as a POST, so it is indexed atomically,
// then its 1.0.0 key is deleted. 1.0.0 never changed or deleted a plant, so
// copying then deleting loses nothing, and a re-run after an interruption
// finishes the job. It scans every master with SCAN (never KEYS), once,
// moving up to migrationWorkers plants at once; plants that 1.0.0 replicas
// still write while it runs are moved by the next pass (SettleLegacy,
// docs/storage.md). Conflicts come in ascending id order.
func (r *Redis) MigrateLegacy(ctx context.Context) (MigrationResult, error) {
	var (
		mu  sync.Mutex
		res MigrationResult
	)
	count := func(id int64, outcome plant.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		switch outcome {
		case plant.Created:
			res.Moved++
		case plant.Replayed:
			res.Already++
		default:
			res.Conflicts = append(res.Conflicts, id)
		}
	}
	migrateNode := func(ctx context.Context, node redis.Cmdable) error {
		// Plants move independently of each other, so migrationWorkers
		// move them at once: one at a time, each waited for its round trips
		// and, with appendfsync always, its fsyncs (1,200 plants/s on the
		// bench's machine, 14 minutes for a million).
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		keys := make(chan string, migrationWorkers)
		var wg sync.WaitGroup
		for range migrationWorkers {
			wg.Go(func() {
				for key := range keys {
					if ctx.Err() != nil {
						continue // a failure ends the pass: drain
					}
					id, _ := legacyID(r.prefix, key)
					outcome, err := r.migrateOne(ctx, key, id)
					if err != nil {
						cancel(err)
						continue
					}
					count(id, outcome)
				}
			})
		}
		iter := node.Scan(ctx, 0, r.prefix+"plant:{*}", 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			if _, ok := legacyID(r.prefix, key); !ok {
				continue
			}
			select {
			case keys <- key:
			case <-ctx.Done():
			}
		}
		close(keys)
		wg.Wait()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return iter.Err()
	}
	if err := eachMaster(ctx, r.client, migrateNode); err != nil {
		return res, classify(fmt.Errorf("migrating 1.0.0 plants: %w", err))
	}
	slices.Sort(res.Conflicts) // the workers found them in no order
	return res, nil
}

// migrateOne moves one 1.0.0 plant; its outcome is 0 for a conflict.
func (r *Redis) migrateOne(ctx context.Context, key string, id int64) (plant.Outcome, error) {
	value, err := r.client.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return plant.Replayed, nil // moved by a concurrent run
	}
	if err != nil {
		return 0, err
	}
	p, err := decodePlant(id, value)
	if err != nil {
		return 0, err
	}
	_, outcome, err := r.Create(ctx, p)
	if errors.Is(err, plant.ErrConflict) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	// Only the value read and moved: a 1.0.0 pod may have written the key
	// again since another run deleted it, and that plant is not moved yet.
	if err := delIfScript.Run(ctx, r.client, []string{key}, value).Err(); err != nil {
		return 0, err
	}
	return outcome, nil
}

// delIfScript deletes KEYS[1] if it still holds ARGV[1]; 1 if it did.
var delIfScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
`)

// legacyID reads the id out of a 1.0.0 key, and refuses any other key.
func legacyID(prefix, key string) (int64, bool) {
	s, ok := strings.CutPrefix(key, prefix+"plant:{")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "}")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(id, 10) != s {
		return 0, false
	}
	return id, true
}

// DefaultMigrationPause is the pause between two passes of a settling
// migration (MigrationOptions.Pause zero).
const DefaultMigrationPause = time.Second

// MigrationOptions tune RunMigration and SettleLegacy.
type MigrationOptions struct {
	// Settle zero: one pass of MigrateLegacy, the whole job. Otherwise passes
	// repeat, Pause apart, until the migration has settled: a pass that saw
	// no 1.0.0 key, other than ids an earlier pass already reported as
	// conflicts, started at least Settle after the start of the first of an
	// unbroken run of such passes that ends with it (see SettleLegacy).
	Settle time.Duration
	// SettleFound, once a pass has seen a 1.0.0 key, raises Settle to at
	// least this: where 1.0.0 keys are, 1.0.0 pods may still be draining,
	// whatever the caller could tell about the rollout (a GitOps sync cannot
	// tell an upgrade from an install). Zero: Settle alone.
	SettleFound time.Duration
	// Pause between the end of one pass and the start of the next
	// (zero: DefaultMigrationPause).
	Pause time.Duration
}

// settleFor is the settle time in force once found says whether a pass
// has seen a 1.0.0 key.
func (o MigrationOptions) settleFor(found bool) time.Duration {
	if found {
		return max(o.Settle, o.SettleFound)
	}
	return o.Settle
}

// Seen is how many 1.0.0 keys the pass found: moved, already there, or in
// conflict.
func (m MigrationResult) Seen() int { return m.Moved + m.Already + len(m.Conflicts) }

// SettleLegacy runs MigrateLegacy until the migration has settled (see
// MigrationOptions.Settle and SettleFound; with both zero, once), calling onPass (if not
// nil) after each pass with its number (from 1), its own result and error.
// It returns the totals (Conflicts: each id once, in the order first seen)
// and the number of passes.
//
// What a settled migration proves: SCAN returns every key present for the
// whole scan, and only a migration removes a 1.0.0 key, so a 1.0.0 key
// written between the start of one pass and the start of the next is seen
// by the next. When the passes of a run all saw nothing new, no 1.0.0 key
// was written from the start of the first of them to the start of the last,
// at least Settle, and every one written before that last start has been
// moved (or is a reported conflict). A 1.0.0 pod that can still write, for
// at most its termination grace period after it was told to stop, writes
// within that window or never: set Settle above the grace period. Keys a
// pass finds reset the run; so an endless trickle of 1.0.0 writes keeps it
// going until ctx ends.
//
// It stops at once when ctx is done, with ctx's error (and the totals so
// far). A pass that fails because the store is unavailable
// (plant.ErrUnavailable: Redis restarting, a failover) is not quiet, and
// while settling the next pass follows after the pause, so a Redis restart
// during the rollout costs the settle time again rather than the run;
// any other failed pass, or any with Settle zero, ends it with its error.
func (r *Redis) SettleLegacy(ctx context.Context, o MigrationOptions, onPass func(pass int, res MigrationResult, err error)) (MigrationResult, int, error) {
	pause := o.Pause
	if pause <= 0 {
		pause = DefaultMigrationPause
	}
	var (
		total      MigrationResult
		conflicted = map[int64]bool{}
		quietSince time.Time // start of the run of quiet passes; zero: none
		found      bool      // a pass has seen a 1.0.0 key
	)
	for pass := 1; ; pass++ {
		if err := ctx.Err(); err != nil {
			return total, pass - 1, err
		}
		start := time.Now()
		res, err := r.MigrateLegacy(ctx)
		total.Moved += res.Moved
		total.Already += res.Already
		quiet := res.Moved == 0 && res.Already == 0
		for _, id := range res.Conflicts {
			if !conflicted[id] {
				conflicted[id] = true
				total.Conflicts = append(total.Conflicts, id)
				quiet = false
			}
		}
		found = found || res.Seen() > 0
		settle := o.settleFor(found)
		if err != nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if onPass != nil {
			onPass(pass, res, err)
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return total, pass, ctx.Err()
		case err != nil && (settle <= 0 || !errors.Is(err, plant.ErrUnavailable)):
			return total, pass, err
		case settle <= 0:
			return total, pass, nil
		}
		switch {
		case !quiet || err != nil:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = start
		}
		if !quietSince.IsZero() && start.Sub(quietSince) >= settle {
			return total, pass, nil
		}
		select {
		case <-ctx.Done():
			return total, pass, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// RunMigration is the command `plantstore migrate-store`: SettleLegacy on
// the Redis the options name, a report on out, and an error when a plant
// could not be moved (a conflict, reported after the migration settled) or
// the migration was interrupted.
func RunMigration(ctx context.Context, o RedisOptions, m MigrationOptions, out io.Writer) error {
	if len(o.Addrs) == 0 {
		return errors.New("no --redis-addr: the embedded store has nothing to migrate")
	}
	client, err := NewRedisClient(o)
	if err != nil {
		return fmt.Errorf("redis client: %w", err)
	}
	defer client.Close()
	r := NewRedis(client, o.KeyPrefix).WaitForReplicas(o.MinReplicaAcks, o.ReplicaAckTimeout)
	var onPass func(int, MigrationResult, error)
	settling := m.Settle > 0 || m.SettleFound > 0
	if settling {
		// One line per pass that found something or failed: a pass that
		// found nothing says nothing, so a quiet settle window prints no line
		// a second.
		onPass = func(pass int, res MigrationResult, err error) {
			if res.Seen() > 0 || err != nil {
				fmt.Fprintf(out, "migrate-store: pass %d: %d moved, %d already there, %d conflicts",
					pass, res.Moved, res.Already, len(res.Conflicts))
				if errors.Is(err, plant.ErrUnavailable) && ctx.Err() == nil {
					fmt.Fprintf(out, "; failed, again in %v: %v", cmp.Or(m.Pause, DefaultMigrationPause), err)
				}
				fmt.Fprintln(out)
			}
		}
	}
	res, passes, err := r.SettleLegacy(ctx, m, onPass)
	fmt.Fprintf(out, "migrate-store: %d plants moved to the 1.1.0 layout, %d already there, %d conflicts",
		res.Moved, res.Already, len(res.Conflicts))
	if settling {
		fmt.Fprintf(out, " (%d passes", passes)
		if err == nil {
			fmt.Fprintf(out, "; settled: no new 1.0.0 key for %v", m.settleFor(res.Seen() > 0))
		}
		fmt.Fprint(out, ")")
	}
	fmt.Fprintln(out)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted before the migration settled: %w", err)
		}
		return err
	}
	if len(res.Conflicts) > 0 {
		return fmt.Errorf("%d ids hold a different plant in the 1.1.0 layout; their 1.0.0 keys (%s) are kept: %v",
			len(res.Conflicts), LegacyPlantKey(o.KeyPrefix, res.Conflicts[0]), res.Conflicts[:min(len(res.Conflicts), 20)])
	}
	return nil
}
