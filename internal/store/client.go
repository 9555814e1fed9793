package store

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/plantstore/plantstore/internal/tlsca"
)

// RedisOptions configure the Redis client. Secrets never arrive as flag
// values (they would show in ps); they come from files or the environment.
type RedisOptions struct {
	// Addrs: one address selects a single node, several a Cluster; with
	// MasterName set they are Sentinel addresses.
	Addrs      []string
	MasterName string
	// Cluster forces Cluster mode with a single seed address.
	Cluster          bool
	Username         string
	Password         string
	SentinelUsername string
	SentinelPassword string
	DB               int
	KeyPrefix        string

	TLS           bool
	TLSCAFile     string
	TLSServerName string

	// MinReplicaAcks > 0: a create answers 200 only after that many replicas
	// acknowledged it (WAIT), within ReplicaAckTimeout; see WaitForReplicas.
	MinReplicaAcks    int
	ReplicaAckTimeout time.Duration

	// Batch: coalesce the single commands of concurrent requests into
	// pipelines (Batcher); off, one round trip per command.
	Batch bool

	PoolSize     int
	MaxRetries   int
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
}

// connBuffer and pipelineBuffer are the sizes of the read and write buffers
// of each Redis connection, and of each connection of go-redis's pipeline
// pool.
const (
	connBuffer     = 16 << 10
	pipelineBuffer = 32 << 10
)

// NewRedisClient builds the go-redis client the options describe: a single
// node, a Cluster or a Sentinel-managed master.
func NewRedisClient(o RedisOptions) (redis.UniversalClient, error) {
	if len(o.Addrs) == 0 {
		return nil, errors.New("no redis address")
	}
	u := &redis.UniversalOptions{
		Addrs:            o.Addrs,
		MasterName:       o.MasterName,
		Username:         o.Username,
		Password:         o.Password,
		SentinelUsername: o.SentinelUsername,
		SentinelPassword: o.SentinelPassword,
		DB:               o.DB,
		IsClusterMode:    o.Cluster,
		ClientName:       "plantstore",
		// CLIENT SETINFO on every new connection costs a round trip and
		// fails on Redis before 7.2; CLIENT SETNAME already names us.
		DisableIdentity: true,
		// Maintenance notifications are Redis Enterprise's. In go-redis's
		// default auto mode a new connection asks for them, open-source Redis
		// refuses (an error in its errorstats), and the fallback that turns
		// them off rewrites the options that the Conns of one client share,
		// unguarded: a data race go test -race found.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PoolSize:                 o.PoolSize,
		MaxRetries:               o.MaxRetries,
		DialTimeout:              o.DialTimeout,
		// One dial per attempt: a refused connection should fail the attempt
		// now, leaving retries to MaxRetries within the request's deadline,
		// rather than hold every request for the whole store timeout.
		DialerRetries: 1,
		ReadTimeout:   o.ReadTimeout,
		WriteTimeout:  o.WriteTimeout,
		// Honour request deadlines, so that the store timeout bounds every call.
		ContextTimeoutEnabled: true,
		// go-redis sizes its buffers for large values (32 KiB each way per
		// connection, 128 KiB per pipeline). A plant is a few hundred bytes:
		// a batch of 128 creates or a page of 100 fits these. A reply longer
		// than the buffer is read straight into its own slice, a write longer
		// than it flushes twice. Smaller buffers lower the peak memory under
		// many connections (docs/performance.md).
		ReadBufferSize:  connBuffer,
		WriteBufferSize: connBuffer,
	}
	// A Cluster client has a pipeline pool only if its buffers are sized
	// (the rule is go-redis's NewUniversalClient's): leave it without.
	if o.MasterName != "" || (len(o.Addrs) == 1 && !o.Cluster) {
		u.PipelineReadBufferSize, u.PipelineWriteBufferSize = pipelineBuffer, pipelineBuffer
	}
	if o.TLS {
		cfg, err := tlsConfig(o)
		if err != nil {
			return nil, err
		}
		u.TLSConfig = cfg
	}
	if o.MasterName != "" {
		u.Dialer = sentinelAwareDialer(o, u.TLSConfig)
	}
	// MasterName selects Sentinel, several addresses (or IsClusterMode) a
	// Cluster, and one address a single node.
	return redis.NewUniversalClient(u), nil
}

func tlsConfig(o RedisOptions) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TLSServerName}
	if o.TLSCAFile != "" {
		pool, err := tlsca.Pool(o.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("redis TLS CA file: %w", err)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
