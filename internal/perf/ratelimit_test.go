package perf

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/ratelimit"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/telemetry"
	"github.com/plantstore/plantstore/internal/version"
)

// BenchmarkRateLimitOverhead serves POST /plants through the service's
// chain (metrics, default log sampling, no tracing) for a client with a
// rate limit it never reaches, and the same chain without a limiter, in
// interleaved batches so that a change of machine load hits both alike.
// ns/op is per request of either chain; the figure is the ratio of the
// totals, limited/unlimited. On Redis both the store and the limiter use
// one redis-server, each with its own client, as the service does; in
// memory, the embedded store and the in-process limiter.
func BenchmarkRateLimitOverhead(b *testing.B) {
	redisServer := redistest.Start(b)
	for _, backend := range []string{"redis", "memory"} {
		b.Run("store="+backend, func(b *testing.B) {
			var repo store.Backend = store.NewMemory()
			var limits ratelimit.Store = ratelimit.NewMemory()
			if backend == "redis" {
				opts := store.RedisOptions{Addrs: []string{redisServer.Addr}, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}
				storeClient, err := store.NewRedisClient(opts)
				if err != nil {
					b.Fatal(err)
				}
				defer storeClient.Close()
				opts.MaxRetries = -1
				limitClient, err := store.NewRedisClient(opts)
				if err != nil {
					b.Fatal(err)
				}
				defer limitClient.Close()
				repo, limits = store.NewRedis(storeClient, "bench:"), ratelimit.NewRedis(limitClient, "bench:")
			}
			limiter := ratelimit.New(limits, auth.Rate{}, time.Second, zap.NewNop(), nil)
			set, err := auth.ParseTokens(strings.NewReader(benchToken+" name=bench rate=1000000000/s\n"), time.Now())
			if err != nil {
				b.Fatal(err)
			}
			keyring := auth.NewKeyring(set)
			unlimited := serviceChain(b, repo, keyring, nil)
			limited := serviceChain(b, repo, keyring, limiter.Middleware)

			var id atomic.Int64
			id.Store(time.Now().UnixNano())
			w := &discardWriter{header: make(http.Header)}
			const batch = 32
			var tBase, tLimited time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n += 2 * batch {
				start := time.Now()
				for range batch {
					serveOne(b, unlimited, w, id.Add(1))
				}
				mid := time.Now()
				for range batch {
					serveOne(b, limited, w, id.Add(1))
				}
				tBase += mid.Sub(start)
				tLimited += time.Since(mid)
			}
			b.ReportMetric(float64(tLimited)/float64(tBase), "limited/unlimited")
			b.ReportMetric(float64(tLimited-tBase)/float64(b.N/2), "added-ns/req")
		})
	}
}

// serviceChain is the API handler as the service builds it, with limit as
// its rate limiter (nil: none).
func serviceChain(b *testing.B, repo store.Backend, keyring *auth.Keyring, limit func(http.Handler) http.Handler) http.Handler {
	b.Helper()
	return serviceChainAuth(b, repo, auth.Middleware(keyring, nil), limit)
}

// serviceChainAuth is serviceChain with authenticate as its bearer
// middleware.
func serviceChainAuth(b *testing.B, repo store.Backend, authenticate, limit func(http.Handler) http.Handler) http.Handler {
	b.Helper()
	reg := telemetry.NewRegistry(version.Get())
	log, err := telemetry.NewLoggerTo(telemetry.LogOptions{Level: "info", Format: "json", SamplingInitial: 100, SamplingThereafter: 100}, zapcore.AddSync(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	tracing, err := telemetry.NewTracing(b.Context(), version.Get())
	if err != nil {
		b.Fatal(err)
	}
	res, err := httpapi.New(httpapi.Params{
		Options: httpapi.Options{StoreTimeout: time.Second}, Repository: repo, Log: log, Registry: reg, Tracing: tracing,
		Authenticate: authenticate, Limit: limit,
	})
	if err != nil {
		b.Fatal(err)
	}
	return res.Handler
}
