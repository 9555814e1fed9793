package oidcauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap/zaptest"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/oidcauth/oidcauthtest"
)

const audience = "plantstore"

// clock is a time the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func testOptions(issuers ...IssuerOptions) Options {
	return Options{Issuers: issuers, Leeway: 30 * time.Second, RefreshInterval: time.Hour,
		MinRefreshInterval: 10 * time.Second, Timeout: 2 * time.Second, CacheSize: 100}
}

func newTestVerifier(t testing.TB, o Options) (*Verifier, *clock) {
	t.Helper()
	c := &clock{now: time.Now()}
	v, err := newVerifier(o, zaptest.NewLogger(t), prometheus.NewRegistry(), noop.NewTracerProvider(), c.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Stop)
	return v, c
}

func issuerOptions(iss *oidcauthtest.Issuer) IssuerOptions {
	return IssuerOptions{URL: iss.URL, Audience: audience, CAFile: iss.CAFile}
}

// rejected asserts err is a 401 whose message says want.
func rejected(t *testing.T, err error, want string) {
	t.Helper()
	var r *auth.TokenRejectedError
	if !errors.As(err, &r) {
		t.Fatalf("error %v, want a rejection saying %q", err, want)
	}
	if !strings.Contains(r.Message, want) {
		t.Fatalf("rejection %q, want it to say %q", r.Message, want)
	}
}

func TestVerifyChecks(t *testing.T) {
	iss := oidcauthtest.Start(t)
	other := oidcauthtest.Start(t)
	v, _ := newTestVerifier(t, testOptions(issuerOptions(iss)))
	now := time.Now()
	with := func(change func(map[string]any)) map[string]any {
		c := iss.Claims("system:serviceaccount:shop:orders", audience)
		change(c)
		return c
	}
	valid := iss.Sign(t, with(func(map[string]any) {}))
	hmacPEM, hmacDER := iss.SignHMACWithPublicKey(t, with(func(map[string]any) {}))
	parts := strings.Split(valid, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	payload = []byte(strings.Replace(string(payload), "shop:orders", "shop:admins", 1))
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]

	tests := []struct {
		name, token, says string
		expired           bool
	}{
		{"expired", iss.Sign(t, with(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() })), "has expired", true},
		{"no expiry", iss.Sign(t, with(func(c map[string]any) { delete(c, "exp") })), "no expiry", false},
		{"not yet valid", iss.Sign(t, with(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() })), "not valid yet", false},
		{"issued in the future", iss.Sign(t, with(func(c map[string]any) { c["iat"] = now.Add(time.Hour).Unix() })), "issued in the future", false},
		{"another audience", iss.Sign(t, with(func(c map[string]any) { c["aud"] = []string{"kubernetes", "other"} })), "audience", false},
		{"no subject", iss.Sign(t, with(func(c map[string]any) { delete(c, "sub") })), "no subject", false},
		{"issuer not trusted", other.Sign(t, other.Claims("x", audience)), "issuer (iss) is not one plantstore trusts", false},
		{"issuer claim of another", iss.Sign(t, with(func(c map[string]any) { c["iss"] = other.URL })), "issuer (iss)", false},
		{"alg none", iss.Unsigned(t, with(func(map[string]any) {})), "algorithm is not accepted", false},
		{"HMAC with the public key as PEM", hmacPEM, "algorithm is not accepted", false},
		{"HMAC with the public key as DER", hmacDER, "algorithm is not accepted", false},
		{"payload changed", tampered, "signature does not verify", false},
		{"three parts, not base64", "a.b.c", "not a well-formed JWT", false},
		{"too long", parts[0] + "." + strings.Repeat("A", MaxTokenBytes) + "." + parts[2], "longer than", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := v.Verify(context.Background(), tt.token)
			if id != nil {
				t.Fatalf("Verify accepted it as %+v", id)
			}
			rejected(t, err, tt.says)
			var r *auth.TokenRejectedError
			if errors.As(err, &r) && r.Expired != tt.expired {
				t.Errorf("Expired = %v, want %v", r.Expired, tt.expired)
			}
			if strings.Contains(err.Error(), "system:serviceaccount") || strings.Contains(err.Error(), other.URL) {
				t.Errorf("the message %q quotes a claim", err)
			}
		})
	}

	t.Run("not a JWT", func(t *testing.T) {
		for _, token := range []string{"plain-api-key", "a.b", "a.b.c.d"} {
			if _, err := v.Verify(context.Background(), token); !errors.Is(err, auth.ErrNotJWT) {
				t.Errorf("%q: %v, want ErrNotJWT", token, err)
			}
		}
	})
	t.Run("valid", func(t *testing.T) {
		id, err := v.Verify(context.Background(), iss.Sign(t, with(func(c map[string]any) {
			c["groups"] = []any{"shop-admins", 7, "ops"}
			c["azp"] = "orders-client"
			c["leeway"] = true
			c["exp"] = now.Add(-10 * time.Second).Unix() // within the leeway
		})))
		if err != nil {
			t.Fatal(err)
		}
		if id.Issuer != iss.URL || id.Subject != "system:serviceaccount:shop:orders" {
			t.Errorf("identity %+v", id)
		}
		if g := strings.Join(id.Claims["groups"], ","); g != "shop-admins,ops" || id.Claims["azp"][0] != "orders-client" {
			t.Errorf("claims %v", id.Claims)
		}
		if _, ok := id.Claims["leeway"]; ok {
			t.Errorf("a bool claim was kept: %v", id.Claims)
		}
	})
}

// TestKeysCachedAndRotated: a verified token is remembered (the issuer may
// go down); a token of a new key fetches the keys once; the old keys'
// tokens work while the key set keeps them, and are refused once it drops
// them.
func TestKeysCachedAndRotated(t *testing.T) {
	iss := oidcauthtest.Start(t)
	v, clk := newTestVerifier(t, testOptions(issuerOptions(iss)))
	ctx := context.Background()
	claims := iss.Claims("system:serviceaccount:shop:orders", audience)
	old := iss.Sign(t, claims)
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatal(err)
	}
	if n := iss.KeySetFetches(); n != 1 {
		t.Fatalf("%d key set fetches for the first token, want 1", n)
	}
	iss.SetDown(true)
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatalf("a remembered token, the issuer down: %v", err)
	}
	if _, err := v.Verify(ctx, iss.Sign(t, iss.Claims("other", audience))); err != nil {
		t.Fatalf("a new token of a cached key, the issuer down: %v", err)
	}
	if v.cache.Len() != 2 {
		t.Errorf("cache holds %d, want 2", v.cache.Len())
	}
	iss.SetDown(false)

	// An unknown kid: one fetch, then 401 for another within the interval.
	clk.Add(11 * time.Second)
	rejected(t, verifyErr(v, iss.SignUnpublished(t, claims)), "signing key (kid) is not in its issuer's key set")
	rejected(t, verifyErr(v, iss.SignUnpublished(t, claims)), "signing key (kid)")
	if n := iss.KeySetFetches(); n != 2 {
		t.Fatalf("%d key set fetches after two unknown kids, want 2 (one, rate-limited)", n)
	}

	// Rotation to an ECDSA key, the old one kept.
	clk.Add(11 * time.Second)
	iss.Rotate(t, jose.ES256, true)
	fresh := iss.Sign(t, claims)
	if _, err := v.Verify(ctx, fresh); err != nil {
		t.Fatalf("a token of the new key: %v", err)
	}
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatalf("a token of the old key, still published: %v", err)
	}
	if n := iss.KeySetFetches(); n != 3 {
		t.Fatalf("%d key set fetches, want 3", n)
	}

	// The old key withdrawn: its tokens are verified again, and refused.
	clk.Add(11 * time.Second)
	iss.Rotate(t, jose.RS256, false)
	if _, err := v.Verify(ctx, iss.Sign(t, claims)); err != nil {
		t.Fatalf("a token of the newest key: %v", err)
	}
	rejected(t, verifyErr(v, old), "signing key (kid)")
	rejected(t, verifyErr(v, fresh), "signing key (kid)")
}

func verifyErr(v *Verifier, token string) error {
	_, err := v.Verify(context.Background(), token)
	return err
}

// TestIssuerUnavailable: with no keys cached, an issuer that is down, hangs
// or refuses the bearer token makes its tokens unverifiable (503 with a
// Retry-After), never rejected; it recovers once the issuer answers.
func TestIssuerUnavailable(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("pod-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(*oidcauthtest.Issuer, *IssuerOptions)
		fix   func(*oidcauthtest.Issuer, *IssuerOptions)
	}{
		{"down", func(i *oidcauthtest.Issuer, _ *IssuerOptions) { i.SetDown(true) }, func(i *oidcauthtest.Issuer, _ *IssuerOptions) { i.SetDown(false) }},
		{"hangs", func(i *oidcauthtest.Issuer, _ *IssuerOptions) { i.SetHang(true) }, func(i *oidcauthtest.Issuer, _ *IssuerOptions) { i.SetHang(false) }},
		{"bearer token refused", func(i *oidcauthtest.Issuer, o *IssuerOptions) {
			i.RequireBearer("pod-token")
			wrong := filepath.Join(filepath.Dir(tokenFile), "wrong")
			if err := os.WriteFile(wrong, []byte("not-it"), 0o600); err != nil {
				t.Fatal(err)
			}
			o.TokenFile = wrong
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss := oidcauthtest.Start(t)
			o := issuerOptions(iss)
			tt.setup(iss, &o)
			opts := testOptions(o)
			opts.Timeout = 300 * time.Millisecond
			v, clk := newTestVerifier(t, opts)
			token := iss.Sign(t, iss.Claims("sub", audience))
			_, err := v.Verify(context.Background(), token)
			var u *auth.IssuerUnavailableError
			if !errors.As(err, &u) {
				t.Fatalf("%v, want IssuerUnavailableError", err)
			}
			if u.RetryAfter < time.Second || u.RetryAfter > opts.MinRefreshInterval {
				t.Errorf("RetryAfter %v, want 1s to %v", u.RetryAfter, opts.MinRefreshInterval)
			}
			if tt.fix == nil {
				return
			}
			tt.fix(iss, &o)
			// Within the interval no fetch is tried: still unavailable.
			if _, err := v.Verify(context.Background(), token); !errors.As(err, &u) {
				t.Fatalf("before the interval: %v, want unavailable", err)
			}
			clk.Add(opts.MinRefreshInterval)
			if _, err := v.Verify(context.Background(), token); err != nil {
				t.Fatalf("after the issuer came back: %v", err)
			}
		})
	}
	t.Run("bearer token sent", func(t *testing.T) {
		iss := oidcauthtest.Start(t)
		iss.RequireBearer("pod-token")
		o := issuerOptions(iss)
		o.TokenFile = tokenFile
		v, _ := newTestVerifier(t, testOptions(o))
		if _, err := v.Verify(context.Background(), iss.Sign(t, iss.Claims("sub", audience))); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStartFetchesInBackground: Start fetches the keys before any token
// needs them.
func TestStartFetchesInBackground(t *testing.T) {
	iss := oidcauthtest.Start(t)
	v, _ := newTestVerifier(t, testOptions(issuerOptions(iss)))
	v.Start()
	deadline := time.Now().Add(10 * time.Second)
	for v.issuers[iss.URL].keys.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Start did not fetch the keys")
		}
		time.Sleep(10 * time.Millisecond)
	}
	v.Stop()
}

// TestCacheBounded: the cache holds at most CacheSize verified tokens,
// forgetting the least recently used; a remembered token past its expiry
// (and the leeway) is refused as expired, and forgotten.
func TestCacheBounded(t *testing.T) {
	iss := oidcauthtest.Start(t)
	o := testOptions(issuerOptions(iss))
	o.CacheSize = 3
	v, clk := newTestVerifier(t, o)
	remembered := func(token string) bool { return v.cache.Contains(sha256.Sum256([]byte(token))) }
	var tokens []string
	for i := range 10 {
		token := iss.Sign(t, iss.Claims(fmt.Sprintf("sub-%d", i), audience))
		tokens = append(tokens, token)
		if err := verifyErr(v, token); err != nil {
			t.Fatal(err)
		}
		if n := v.cache.Len(); n > 3 {
			t.Fatalf("%d entries after %d tokens, bound 3", n, i+1)
		}
	}
	// 7, 8 and 9 are remembered; 7 used again, 0 verified again: 8 goes.
	if err := verifyErr(v, tokens[7]); err != nil {
		t.Fatal(err)
	}
	if err := verifyErr(v, tokens[0]); err != nil {
		t.Fatal(err)
	}
	if !remembered(tokens[7]) || !remembered(tokens[0]) || remembered(tokens[8]) {
		t.Error("a full cache forgot a recently used token rather than the least recently used")
	}

	claims := iss.Claims("short-lived", audience)
	claims["exp"] = time.Now().Add(time.Minute).Unix()
	short := iss.Sign(t, claims)
	if err := verifyErr(v, short); err != nil || !remembered(short) {
		t.Fatalf("a token for a minute: %v, remembered %v", err, remembered(short))
	}
	clk.Add(time.Minute + o.Leeway + time.Second)
	var r *auth.TokenRejectedError
	if err := verifyErr(v, short); !errors.As(err, &r) || !r.Expired {
		t.Fatalf("a remembered token past its expiry: %v, want a rejection as expired", err)
	}
	if remembered(short) {
		t.Error("an expired token is still remembered")
	}
}

// TestMetrics: the JWT metrics are plantstore_auth_jwt_*, the results'
// series there from the start.
func TestMetrics(t *testing.T) {
	iss := oidcauthtest.Start(t)
	reg := prometheus.NewRegistry()
	v, err := newVerifier(testOptions(issuerOptions(iss)), zaptest.NewLogger(t), reg, noop.NewTracerProvider(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	if err := verifyErr(v, iss.Sign(t, iss.Claims("sub", audience))); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, f := range families {
		series[f.GetName()] = len(f.GetMetric())
	}
	want := map[string]int{"plantstore_auth_jwt_verifications_total": 4, "plantstore_auth_jwt_key_fetches_total": 1,
		"plantstore_auth_jwt_keys_last_success_timestamp_seconds": 1, "plantstore_auth_jwt_cache_entries": 1}
	if !maps.Equal(series, want) {
		t.Errorf("metrics and their series %v, want %v", series, want)
	}
	if _, err := newVerifier(testOptions(issuerOptions(iss)), zaptest.NewLogger(t), reg, noop.NewTracerProvider(), time.Now); err == nil {
		t.Error("a second verifier registered on one registry")
	}
}

func TestParseIssuers(t *testing.T) {
	good := "# issuers\nhttps://kubernetes.default.svc.cluster.local audience=plantstore ca-file=/ca.crt discovery-token-file=/token\n\nhttps://dex.example/dex audience=plantstore jwks-url=https://dex.example/keys # dex\n"
	got, err := ParseIssuers(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	want := []IssuerOptions{
		{URL: "https://kubernetes.default.svc.cluster.local", Audience: "plantstore", CAFile: "/ca.crt", TokenFile: "/token"},
		{URL: "https://dex.example/dex", Audience: "plantstore", JWKSURL: "https://dex.example/keys"},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ParseIssuers = %+v", got)
	}
	for _, bad := range []struct{ file, says string }{
		{"", "no issuer"},
		{"# none\n", "no issuer"},
		{"http://issuer audience=a\n", "https"},
		{"https://issuer?x=1 audience=a\n", "https"},
		{"https://issuer\n", "audience= is required"},
		{"https://issuer audience=a audience=b\n", "given twice"},
		{"https://issuer audience=a owner=me\n", "unknown"},
		{"https://issuer audience=a ca-file=\n", "not key=value"},
		{"https://issuer audience=a jwks-url=http://x/keys\n", "jwks-url="},
		{"https://issuer audience=a\nhttps://issuer audience=b\n", "line 2: the issuer of line 1 again"},
	} {
		if _, err := ParseIssuers(strings.NewReader(bad.file)); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%q: %v, want an error saying %q", bad.file, err, bad.says)
		}
	}
}

// TestDocumentBounded: the issuer's client reads a document of up to
// maxDocumentBytes, and fails one longer rather than cutting it.
func TestDocumentBounded(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		_, _ = w.Write(bytes.Repeat([]byte("x"), n))
	}))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := newHTTPClient(IssuerOptions{URL: srv.URL, CAFile: caFile}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for n, ok := range map[int]bool{maxDocumentBytes: true, maxDocumentBytes + 1: false} {
		resp, err := client.Get(fmt.Sprintf("%s/?n=%d", srv.URL, n))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ok && (err != nil || len(body) != n) {
			t.Errorf("a document of %d bytes: %d read, %v", n, len(body), err)
		}
		if !ok && err == nil {
			t.Errorf("a document of %d bytes read whole, over the limit", n)
		}
	}
}
