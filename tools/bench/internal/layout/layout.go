// Package layout is the service's Redis key layout of API 1.1.0
// (docs/storage.md), replicated in the few lines the floor and the harness
// need: the floor reads and deletes what the service created, and the
// harness fills the store the way the service's create script does. The
// service's own helpers live in its internal/store package, which this
// module does not import (it would bring the service's telemetry into the
// floor); TestLayoutVectors pins the documented values, and every GET of a
// bench run checks the service answers the plants filled here.
package layout

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Shards is the service's fixed number of shards and listing indexes.
const Shards = 16

// The shards' hash tags, as the service names them.
var shardTags = [Shards]string{
	"{s00.22}", "{s01.21}", "{s02.11}", "{s03.12}", "{s04.41}", "{s05.42}", "{s06.2}", "{s07.1}",
	"{s08.0}", "{s09.3}", "{s10.22}", "{s11.21}", "{s12.2}", "{s13.1}", "{s14.41}", "{s15.42}",
}

// Shard is the shard of a plant id: the id modulo Shards, as uint64.
func Shard(id int64) int { return int(uint64(id) % Shards) }

// PlantKey is the key of plant id's JSON under prefix.
func PlantKey(prefix string, id int64) string {
	return prefix + "plants:" + shardTags[Shard(id)] + ":" + strconv.FormatInt(id, 10)
}

// IndexKey is the key of shard s's listing index (a sorted set, every score
// 0, ordered by member bytes).
func IndexKey(prefix string, s int) string { return prefix + "plants:" + shardTags[s] + ":index" }

// IndexMember encodes id so that byte order is int64 order: the sign bit
// flipped, as 16 lower-case hex digits.
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

// DeleteScript removes a plant and its index entry in one step, as the
// service's delete script does; it returns 1 when the plant was there.
var DeleteScript = redis.NewScript(`
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)

// StoredPlant is a plant's JSON as the service stores it: its id is the key's.
const StoredPlant = `{"name":"Monstera","tag":"tropical"}`

// Fill stores n plants with ids from first to first+n-1, each with
// StoredPlant and its index entry, as the service's create script leaves
// them, in pipelines of a thousand.
func Fill(ctx context.Context, rdb redis.Cmdable, prefix string, first, n int64) error {
	const batch = 1000
	for lo := first; lo < first+n; lo += batch {
		hi := min(lo+batch, first+n)
		_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for id := lo; id < hi; id++ {
				pipe.Set(ctx, PlantKey(prefix, id), StoredPlant, 0)
				pipe.ZAdd(ctx, IndexKey(prefix, Shard(id)), redis.Z{Score: 0, Member: IndexMember(id)})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("filling plants %d to %d: %w", lo, hi-1, err)
		}
	}
	return nil
}
