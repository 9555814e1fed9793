package ratelimit

import (
	"context"
	"fmt"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/auth"
)

// Redis keeps the budgets in Redis, one key a client, updated by one Lua
// script (GCRA, github.com/go-redis/redis_rate) on Redis's clock: every
// replica draws on the same budget. On a Cluster each budget is one key,
// so the script runs on the node of its slot.
type Redis struct {
	limiter *redis_rate.Limiter
	prefix  string
}

// NewRedis returns a store over client; prefix starts every key (the
// library adds "rate:" before it).
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{limiter: redis_rate.NewLimiter(client), prefix: prefix + "ratelimit:"}
}

// Allow takes one request of key's budget.
func (s *Redis) Allow(ctx context.Context, key string, r auth.Rate) (Decision, error) {
	res, err := s.limiter.Allow(ctx, s.prefix+key, redis_rate.Limit{Rate: r.Count, Burst: r.Burst, Period: r.Period})
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit of %s: %w", key, err)
	}
	return Decision{Allowed: res.Allowed > 0, Remaining: res.Remaining, RetryAfter: res.RetryAfter, ResetAfter: res.ResetAfter}, nil
}
