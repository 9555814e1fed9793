package oidcauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/auth"
)

// MaxTokenBytes bounds the JWTs verified: far above a service account
// token (about 1 KiB) or an OIDC token with many groups, far below what
// would make parsing one costly.
const MaxTokenBytes = 16 << 10

// Verifier verifies JWTs of the configured issuers. It implements
// auth.JWTVerifier.
type Verifier struct {
	issuers map[string]*issuer
	urls    []string
	opts    Options
	now     func() time.Time
	// cache remembers verified tokens by their SHA-256, so that steady
	// traffic pays a hash and a lookup, not a signature check. Only tokens
	// that verified get in; past CacheSize the least recently used are
	// forgotten. Each entry carries its own token's expiry, so the cache
	// needs no TTL of its own.
	cache   *lru.Cache[[sha256.Size]byte, *entry]
	metrics *metrics

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ auth.JWTVerifier = (*Verifier)(nil)

// entry is a verified token: its identity until it expires, as long as its
// issuer's key set has dropped no key since (epoch).
type entry struct {
	id     *auth.Identity
	until  time.Time
	issuer *issuer
	epoch  uint64
}

// NewVerifier returns a verifier of the issuers of o, its metrics on reg,
// its fetches traced by tp. Nothing is fetched until Start, or until a
// token needs it.
func NewVerifier(o Options, log *zap.Logger, reg prometheus.Registerer, tp trace.TracerProvider) (*Verifier, error) {
	return newVerifier(o, log, reg, tp, time.Now)
}

func newVerifier(o Options, log *zap.Logger, reg prometheus.Registerer, tp trace.TracerProvider, now func() time.Time) (*Verifier, error) {
	if len(o.Issuers) == 0 {
		return nil, errors.New("no JWT issuer configured")
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cache, err := lru.New[[sha256.Size]byte, *entry](o.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("JWT cache: %w", err)
	}
	base, cancel := context.WithCancel(context.Background())
	v := &Verifier{issuers: map[string]*issuer{}, opts: o, now: now, cancel: cancel, cache: cache}
	m, err := newMetrics(reg, v.cache.Len)
	if err != nil {
		cancel()
		return nil, err
	}
	v.metrics = m
	tracer := tp.Tracer("github.com/plantstore/plantstore/internal/oidcauth")
	for _, opt := range o.Issuers {
		iss, err := newIssuer(base, opt, o, now, log, tracer, m.fetched)
		if err != nil {
			cancel()
			return nil, err
		}
		v.issuers[opt.URL] = iss
		v.urls = append(v.urls, opt.URL)
	}
	return v, nil
}

// Issuers are the URLs of the trusted issuers.
func (v *Verifier) Issuers() []string { return slices.Clone(v.urls) }

// Start fetches every issuer's keys in the background, then again every
// RefreshInterval; after a failure sooner, from MinRefreshInterval on.
func (v *Verifier) Start() {
	for _, iss := range v.issuers {
		v.wg.Go(func() { v.keepFresh(iss) })
	}
}

// Stop ends the background fetches and waits for them.
func (v *Verifier) Stop() {
	v.cancel()
	v.wg.Wait()
}

func (v *Verifier) keepFresh(iss *issuer) {
	backoff := v.opts.MinRefreshInterval
	for {
		err := iss.refresh(iss.base)
		wait := v.opts.RefreshInterval
		switch {
		case errors.Is(err, errThrottled):
			wait = v.opts.MinRefreshInterval
		case err != nil:
			wait, backoff = backoff, min(2*backoff, v.opts.RefreshInterval)
		default:
			backoff = v.opts.MinRefreshInterval
		}
		select {
		case <-iss.base.Done():
			return
		case <-time.After(wait):
		}
	}
}

// reject is a failed check, for the caller.
func reject(msg string) error { return &auth.TokenRejectedError{Message: msg} }

// Verify returns the identity token proves: from the cache when it was
// verified before and has not expired, its issuer having dropped no key
// since; else parsed, its signature checked against its issuer's keys and
// its claims by go-oidc, its times with the leeway.
func (v *Verifier) Verify(ctx context.Context, token string) (*auth.Identity, error) {
	if strings.Count(token, ".") != 2 {
		return nil, auth.ErrNotJWT
	}
	digest := sha256.Sum256([]byte(token))
	now := v.now()
	if e, ok := v.cache.Get(digest); ok && now.Before(e.until) && e.issuer.epoch.Load() == e.epoch {
		v.metrics.result(resultCached)
		return e.id, nil
	} else if ok {
		v.cache.Remove(digest) // expired, or its key dropped: never again
	}
	id, iss, epoch, err := v.verify(ctx, token, now)
	if err != nil {
		var unavailable *auth.IssuerUnavailableError
		if errors.As(err, &unavailable) {
			v.metrics.result(resultUnavailable)
		} else {
			v.metrics.result(resultRejected)
		}
		return nil, err
	}
	v.metrics.result(resultVerified)
	v.cache.Add(digest, &entry{id: id, until: id.Expiry.Add(v.opts.Leeway), issuer: iss, epoch: epoch})
	return id, nil
}

// unverified is what is read of a JWT before its issuer is known.
type unverified struct {
	Issuer string `json:"iss"`
}

func (v *Verifier) verify(ctx context.Context, token string, now time.Time) (*auth.Identity, *issuer, uint64, error) {
	if len(token) > MaxTokenBytes {
		return nil, nil, 0, reject(fmt.Sprintf("the token is longer than the %d bytes a JWT may have here", MaxTokenBytes))
	}
	jws, err := jose.ParseSignedCompact(token, asymmetric)
	if err != nil {
		if _, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.HS256, jose.HS384, jose.HS512, "none"}); err == nil {
			return nil, nil, 0, reject("the token's signing algorithm is not accepted: only asymmetric ones are (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA), never none or an HMAC")
		}
		return nil, nil, 0, reject("the token is not a well-formed JWT: a signed JWS in compact form, three base64url parts")
	}
	if len(jws.Signatures) != 1 {
		return nil, nil, 0, reject("the token is not a well-formed JWT: it must carry exactly one signature")
	}
	var claims unverified
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims); err != nil {
		return nil, nil, 0, reject("the token's claims are not a JSON object")
	}
	iss, ok := v.issuers[claims.Issuer]
	if !ok {
		return nil, nil, 0, reject("the token's issuer (iss) is not one plantstore trusts")
	}
	epoch := iss.epoch.Load()
	ks := iss.keys.Load()
	if ks == nil {
		err := iss.refresh(ctx)
		if ks = iss.keys.Load(); ks == nil {
			if err == nil {
				err = errors.New("no keys")
			}
			return nil, nil, 0, &auth.IssuerUnavailableError{RetryAfter: iss.retryAfter(), Err: err}
		}
		epoch = iss.epoch.Load()
	}
	header := jws.Signatures[0].Header
	alg := jose.SignatureAlgorithm(header.Algorithm)
	keys := ks.find(header.KeyID, alg)
	if len(keys) == 0 {
		// A key the issuer added since the last fetch: fetch once more,
		// unless that happened moments ago.
		_ = iss.refresh(ctx)
		ks = iss.keys.Load()
		epoch = iss.epoch.Load()
		if keys = ks.find(header.KeyID, alg); len(keys) == 0 {
			return nil, nil, 0, reject("the token's signing key (kid) is not in its issuer's key set")
		}
	}
	if !slices.Contains(ks.algs, alg) {
		return nil, nil, 0, reject("the token's signing algorithm is not one its issuer signs with")
	}
	algs := make([]string, len(ks.algs))
	for i, a := range ks.algs {
		algs[i] = string(a)
	}
	bound := &boundKeys{keys: keys}
	verifier := oidc.NewVerifier(iss.opts.URL, bound, &oidc.Config{ClientID: iss.opts.Audience,
		SupportedSigningAlgs: algs, SkipExpiryCheck: true, Now: func() time.Time { return now }})
	tok, err := verifier.Verify(ctx, token)
	switch {
	case err != nil && bound.payload == nil:
		return nil, nil, 0, reject("the token's signature does not verify with its issuer's key")
	case err != nil:
		// The signature verified: a claim check of go-oidc failed. Say
		// which, from the verified claims.
		var c struct {
			Audience json.RawMessage `json:"aud"`
		}
		if json.Unmarshal(bound.payload, &c) == nil && !hasAudience(c.Audience, iss.opts.Audience) {
			return nil, nil, 0, reject("the token's audience (aud) is not plantstore's")
		}
		return nil, nil, 0, reject("the token's claims are malformed")
	}
	var times struct {
		NotBefore *json.Number `json:"nbf"`
	}
	if err := tok.Claims(&times); err != nil {
		return nil, nil, 0, reject("the token's claims are malformed")
	}
	leeway := v.opts.Leeway
	switch {
	case tok.Expiry.IsZero():
		return nil, nil, 0, reject("the token has no expiry (exp): plantstore accepts only tokens that expire")
	case !now.Before(tok.Expiry.Add(leeway)):
		return nil, nil, 0, &auth.TokenRejectedError{Message: "the token has expired", Expired: true}
	case times.NotBefore != nil && unixTime(*times.NotBefore).After(now.Add(leeway)):
		return nil, nil, 0, reject("the token is not valid yet (nbf is in the future)")
	case times.NotBefore != nil && unixTime(*times.NotBefore).IsZero():
		return nil, nil, 0, reject("the token's claims are malformed")
	case tok.IssuedAt.After(now.Add(leeway)):
		return nil, nil, 0, reject("the token was issued in the future (iat)")
	case tok.Subject == "":
		return nil, nil, 0, reject("the token has no subject (sub)")
	}
	var all map[string]any
	if err := tok.Claims(&all); err != nil {
		return nil, nil, 0, reject("the token's claims are malformed")
	}
	return &auth.Identity{Issuer: tok.Issuer, Subject: tok.Subject, Expiry: tok.Expiry, Claims: stringClaims(all)}, iss, epoch, nil
}

// unixTime reads a NumericDate; the zero time when it is not a number.
func unixTime(n json.Number) time.Time {
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1<<40 {
		return time.Time{}
	}
	return time.Unix(int64(f), 0)
}

// hasAudience reports whether an aud claim (a string or an array of them)
// holds want.
func hasAudience(raw json.RawMessage, want string) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == want
	}
	var many []string
	return json.Unmarshal(raw, &many) == nil && slices.Contains(many, want)
}

// stringClaims keeps the claims that identity lines can match: strings,
// and arrays of strings (their strings).
func stringClaims(all map[string]any) map[string][]string {
	out := make(map[string][]string, len(all))
	for name, value := range all {
		switch v := value.(type) {
		case string:
			out[name] = []string{v}
		case []any:
			var ss []string
			for _, e := range v {
				if s, ok := e.(string); ok {
					ss = append(ss, s)
				}
			}
			if ss != nil {
				out[name] = ss
			}
		}
	}
	return out
}

// boundKeys is the key set go-oidc checks one token's signature with: the
// keys found for it. It records the payload once a key verified it, which
// tells a failed signature from a failed claim check.
type boundKeys struct {
	keys    []jose.JSONWebKey
	payload []byte
}

func (b *boundKeys) VerifySignature(_ context.Context, token string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(token, asymmetric)
	if err != nil {
		return nil, err
	}
	for i := range b.keys {
		if payload, err := jws.Verify(&b.keys[i]); err == nil {
			b.payload = payload
			return payload, nil
		}
	}
	return nil, errors.New("no key of the issuer verifies the signature")
}
