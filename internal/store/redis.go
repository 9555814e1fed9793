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

// Redis is the production repository. Each plant is one string key holding
// its JSON; the id sits in a hash tag, so every operation touches exactly one
// Cluster slot.
type Redis struct {
	client redis.UniversalClient
	prefix string
}

// NewRedis returns a repository on client with keys named prefix+"plant:{id}".
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// Key is the Redis key of a plant id.
func (r *Redis) Key(id int64) string {
	return r.prefix + "plant:{" + strconv.FormatInt(id, 10) + "}"
}

type storedPlant struct {
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

// Create implements plant.Repository with one atomic command, SET key value
// NX GET (Redis 7.0 or later): it stores the plant if the key is absent and
// returns what was there otherwise. A retried command whose first attempt
// landed sees its own value and reports Replayed, which is the right answer.
func (r *Redis) Create(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error) {
	value, err := json.Marshal(storedPlant{Name: p.Name, Tag: p.Tag})
	if err != nil {
		return plant.Plant{}, 0, fmt.Errorf("encoding plant %d: %w", p.ID, err)
	}
	old, err := r.client.SetArgs(ctx, r.Key(p.ID), value, redis.SetArgs{Mode: "NX", Get: true}).Result()
	if errors.Is(err, redis.Nil) {
		return p, plant.Created, nil
	}
	if err != nil {
		return plant.Plant{}, 0, classify(fmt.Errorf("storing plant %d: %w", p.ID, err))
	}
	var sp storedPlant
	if err := json.Unmarshal([]byte(old), &sp); err != nil {
		return plant.Plant{}, 0, fmt.Errorf("decoding stored plant %d: %w", p.ID, err)
	}
	stored := plant.Plant{ID: p.ID, Name: sp.Name, Tag: sp.Tag}
	if !stored.SameContent(p) {
		return stored, 0, fmt.Errorf("id %d: %w", p.ID, plant.ErrConflict)
	}
	return stored, plant.Replayed, nil
}

// Get returns the plant stored under id.
func (r *Redis) Get(ctx context.Context, id int64) (plant.Plant, bool, error) {
	v, err := r.client.Get(ctx, r.Key(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return plant.Plant{}, false, nil
	}
	if err != nil {
		return plant.Plant{}, false, classify(fmt.Errorf("reading plant %d: %w", id, err))
	}
	var sp storedPlant
	if err := json.Unmarshal(v, &sp); err != nil {
		return plant.Plant{}, false, fmt.Errorf("decoding stored plant %d: %w", id, err)
	}
	return plant.Plant{ID: id, Name: sp.Name, Tag: sp.Tag}, true, nil
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
var transientReplies = []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "NOREPLICAS"}

// classify marks errors that mean the store is unavailable: network failures,
// timeouts and transient error replies. Other error replies (a command the
// server does not know, say) are bugs or misconfiguration and stay as they are.
func classify(err error) error {
	var reply redis.Error
	if errors.As(err, &reply) {
		msg := reply.Error()
		for _, prefix := range transientReplies {
			if strings.HasPrefix(msg, prefix) {
				return fmt.Errorf("%w: %w", plant.ErrUnavailable, err)
			}
		}
		return err
	}
	return fmt.Errorf("%w: %w", plant.ErrUnavailable, err)
}
