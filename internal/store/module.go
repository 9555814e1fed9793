package store

import (
	"context"
	"fmt"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/plant"
)

// Backend is a plant repository that can be health-checked.
type Backend interface {
	plant.Repository
	Ping(ctx context.Context) error
}

// NewBackend returns the Redis repository when addresses are configured and
// the embedded store otherwise, announcing loudly that the latter loses
// everything on exit. The Redis client is closed when the application stops.
func NewBackend(lc fx.Lifecycle, o RedisOptions, log *zap.Logger) (Backend, error) {
	log = log.Named("store")
	if len(o.Addrs) == 0 {
		log.Warn("USING THE EMBEDDED IN-PROCESS STORE: NOT DURABLE, every plant is lost when the process exits; set --redis-addr for production")
		return NewMemory(), nil
	}
	client, err := NewRedisClient(o)
	if err != nil {
		return nil, fmt.Errorf("redis client: %w", err)
	}
	lc.Append(fx.StopHook(client.Close))
	mode := "single node"
	switch {
	case o.MasterName != "":
		mode = "sentinel"
	case o.Cluster || len(o.Addrs) > 1:
		mode = "cluster"
	}
	log.Info("using redis", zap.Strings("addrs", o.Addrs), zap.String("mode", mode), zap.Bool("tls", o.TLS))
	return NewRedis(client, o.KeyPrefix), nil
}

// Module provides the Backend, and it as the domain's plant.Repository.
var Module = fx.Module("store",
	fx.Provide(
		NewBackend,
		func(b Backend) plant.Repository { return b },
	),
)
