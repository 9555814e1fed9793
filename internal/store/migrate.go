package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

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

// MigrateLegacy moves the plants version 1.0.0 stored (one key
// <prefix>plant:{<id>} each, see LegacyPlantKey) into the 1.1.0 layout: each
// is created through the same script as a POST, so it is indexed atomically,
// then its 1.0.0 key is deleted. 1.0.0 never changed or deleted a plant, so
// copying then deleting loses nothing, and a re-run after an interruption
// finishes the job. It scans every master with SCAN (never KEYS), once; plants
// that 1.0.0 replicas still write while it runs are moved by running it again
// once they are gone (docs/storage.md).
func (r *Redis) MigrateLegacy(ctx context.Context) (MigrationResult, error) {
	var (
		mu  sync.Mutex
		res MigrationResult
	)
	migrateNode := func(ctx context.Context, node redis.UniversalClient) error {
		iter := node.Scan(ctx, 0, r.prefix+"plant:{*}", 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			id, ok := legacyID(r.prefix, key)
			if !ok {
				continue
			}
			outcome, err := r.migrateOne(ctx, key, id)
			if err != nil {
				return err
			}
			mu.Lock()
			switch outcome {
			case plant.Created:
				res.Moved++
			case plant.Replayed:
				res.Already++
			default:
				res.Conflicts = append(res.Conflicts, id)
			}
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return migrateNode(ctx, node) })
	} else {
		err = migrateNode(ctx, r.client)
	}
	if err != nil {
		return res, classify(fmt.Errorf("migrating 1.0.0 plants: %w", err))
	}
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
	if err := r.client.Del(ctx, key).Err(); err != nil {
		return 0, err
	}
	return outcome, nil
}

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

// RunMigration is the command `plantstore migrate-store`: MigrateLegacy on
// the Redis the options name, a report on out, and an error when a plant
// could not be moved.
func RunMigration(ctx context.Context, o RedisOptions, out io.Writer) error {
	if len(o.Addrs) == 0 {
		return errors.New("no --redis-addr: the embedded store has nothing to migrate")
	}
	client, err := NewRedisClient(o)
	if err != nil {
		return fmt.Errorf("redis client: %w", err)
	}
	defer client.Close()
	res, err := NewRedis(client, o.KeyPrefix).WaitForReplicas(o.MinReplicaAcks, o.ReplicaAckTimeout).MigrateLegacy(ctx)
	fmt.Fprintf(out, "migrate-store: %d plants moved to the 1.1.0 layout, %d already there, %d conflicts\n",
		res.Moved, res.Already, len(res.Conflicts))
	if err != nil {
		return err
	}
	if len(res.Conflicts) > 0 {
		return fmt.Errorf("%d ids hold a different plant in the 1.1.0 layout; their 1.0.0 keys (%s) are kept: %v",
			len(res.Conflicts), LegacyPlantKey(o.KeyPrefix, res.Conflicts[0]), res.Conflicts[:min(len(res.Conflicts), 20)])
	}
	return nil
}
