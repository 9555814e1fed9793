package store

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/telemetry"
)

// Backend is a plant repository that can be health-checked.
type Backend interface {
	plant.Repository
	Ping(ctx context.Context) error
}

// Provided is what NewBackend provides: the repository and its outbox.
type Provided struct {
	fx.Out

	Backend Backend
	Outbox  Outbox
}

// NewBackend returns the Redis repository when addresses are configured and
// the embedded store otherwise, announcing loudly that the latter loses
// everything on exit, with its outbox, which records events while rec is on.
// The Redis client is closed when the application stops.
func NewBackend(lc fx.Lifecycle, o RedisOptions, log *zap.Logger, reg prometheus.Registerer, tracing *telemetry.Tracing, rec *Recording) (Provided, error) {
	log = log.Named("store")
	if len(o.Addrs) == 0 {
		log.Warn("USING THE EMBEDDED IN-PROCESS STORE: NOT DURABLE, every plant is lost when the process exits; set --redis-addr for production")
		m := NewMemory().RecordEvents(rec)
		b, err := Instrument(m, reg)
		return Provided{Backend: b, Outbox: m.Outbox()}, err
	}
	client, err := NewRedisClient(o)
	if err != nil {
		return Provided{}, fmt.Errorf("redis client: %w", err)
	}
	lc.Append(fx.StopHook(client.Close))
	if tracing.Exporting {
		if err := TraceCommands(client, tracing.Provider); err != nil {
			return Provided{}, err
		}
	}
	// A scrape waits for the memory reading: well under Prometheus's
	// default scrape timeout (10 s).
	if err := telemetry.Register(reg, NewPoolCollector(client.PoolStats), NewMemoryCollector(client, time.Second)); err != nil {
		return Provided{}, err
	}
	// Read the mode off the client go-redis chose rather than restate its rule.
	mode := "single node"
	switch client.(type) {
	case *redis.ClusterClient:
		mode = "cluster"
	case *redis.Client:
		if o.MasterName != "" {
			mode = "sentinel" // go-redis's failover client is a *redis.Client
		}
	}
	log.Info("using redis", zap.Strings("addrs", o.Addrs), zap.String("mode", mode), zap.Bool("tls", o.TLS),
		zap.Int("min_replica_acks", o.MinReplicaAcks), zap.Bool("batch", o.Batch))
	r := NewRedis(client, o.KeyPrefix).WaitForReplicas(o.MinReplicaAcks, o.ReplicaAckTimeout).RecordEvents(rec)
	if o.Batch {
		var tp trace.TracerProvider
		if tracing.Exporting {
			tp = telemetry.ClientSpans(tracing.Provider)
		}
		batcher, err := NewBatcher(client, BatchOptions{Tracer: tp}, reg)
		if err != nil {
			return Provided{}, err
		}
		// Appended after the client's: stopped before the client closes.
		lc.Append(fx.StopHook(batcher.Close))
		r.Batch(batcher)
	}
	b, err := Instrument(r, reg)
	return Provided{Backend: b, Outbox: r.Outbox()}, err
}

// TraceCommands gives the Redis commands and pipelines of client spans from
// tp, children of their requests' (commandSpans says which, and why).
func TraceCommands(client redis.UniversalClient, tp trace.TracerProvider) error {
	switch c := client.(type) {
	case *redis.Client:
		c.AddHook(newCommandSpans(tp, c.Options().Addr))
	case *redis.ClusterClient: // as redisotel: on each node, the node's address
		c.OnNewNode(func(node *redis.Client) {
			node.AddHook(newCommandSpans(tp, node.Options().Addr))
		})
	default:
		return fmt.Errorf("tracing redis: %T not supported", client)
	}
	return nil
}

// Module provides the Backend, and it as the domain's plant.Repository, its
// Outbox and the switch that makes changes record events (off until the
// webhook module turns it on).
var Module = fx.Module("store",
	fx.Provide(
		NewBackend,
		NewRecording,
		func(b Backend) plant.Repository { return b },
	),
)
