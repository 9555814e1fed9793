package perf

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/oidcauth"
	"github.com/plantstore/plantstore/internal/oidcauth/oidcauthtest"
	"github.com/plantstore/plantstore/internal/store"
)

// BenchmarkChainCredential serves POST /plants through the service's
// chain (metrics, default log sampling, no tracing, the embedded store) for
// a client with an API key and for the same client with a JWT of a local
// issuer (a service account token's claims, RS256), in interleaved batches
// so that a change of machine load hits both alike. The JWT is verified
// once and then found in the verifier's cache, as steady traffic is. The
// figure is the ratio of the totals, jwt/apikey, and the time a JWT adds to
// a request.
func BenchmarkChainCredential(b *testing.B) {
	iss := oidcauthtest.Start(b)
	set, err := auth.ParseTokens(strings.NewReader(benchToken+" name=bench\n"+
		"issuer="+iss.URL+" subject=system:serviceaccount:shop:bench name=bench\n"), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	keyring := auth.NewKeyring(set)
	verifier, err := oidcauth.NewVerifier(oidcauth.Options{
		Issuers: []oidcauth.IssuerOptions{{URL: iss.URL, Audience: "plantstore", CAFile: iss.CAFile}},
		Leeway:  30 * time.Second, RefreshInterval: time.Hour, MinRefreshInterval: time.Minute, Timeout: 5 * time.Second, CacheSize: 10000,
	}, zap.NewNop(), prometheus.NewRegistry(), noop.NewTracerProvider())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(verifier.Stop)
	jwt := iss.Sign(b, iss.Claims("system:serviceaccount:shop:bench", "plantstore"))
	repo := store.NewMemory()
	apiKey := serviceChain(b, repo, keyring, nil)
	withJWT := serviceChainAuth(b, repo, auth.JWTMiddleware(keyring, keyring, verifier, nil), nil)

	var id atomic.Int64
	id.Store(time.Now().UnixNano())
	w := &discardWriter{header: make(http.Header)}
	serveOneAs(b, withJWT, w, id.Add(1), jwt) // verified once, then cached
	const batch = 32
	var tKey, tJWT time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += 2 * batch {
		start := time.Now()
		for range batch {
			serveOneAs(b, apiKey, w, id.Add(1), benchToken)
		}
		mid := time.Now()
		for range batch {
			serveOneAs(b, withJWT, w, id.Add(1), jwt)
		}
		tKey += mid.Sub(start)
		tJWT += time.Since(mid)
	}
	b.ReportMetric(float64(tJWT)/float64(tKey), "jwt/apikey")
	b.ReportMetric(float64(tJWT-tKey)/float64(b.N/2), "added-ns/req")
}
