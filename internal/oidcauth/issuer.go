package oidcauth

import (
	"cmp"
	"context"
	"crypto"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/tlsca"
)

// asymmetric are the signature algorithms a token may use. No HMAC: an
// issuer's keys are public, and a token "signed" with one as an HMAC
// secret (algorithm confusion) must not verify; no "none".
var asymmetric = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// maxDocumentBytes bounds a discovery document or key set read.
const maxDocumentBytes = 1 << 20

// The keys are fetched here, not by go-oidc's RemoteKeySet (nor jwx's
// jwk.Cache): RemoteKeySet keeps its keys to itself and fetches again,
// unthrottled, for every signature that fails to verify. The contract needs
// what it hides: whether an issuer has keys at all (503 50302 until a first
// fetch, then 401s), whether a kid is in the set (the 401 "signing key
// (kid)" against "signature does not verify"), which keys a fetch dropped
// (the tokens remembered are verified again), at most one fetch every
// MinRefreshInterval, and each fetch's result for the metrics and logs.
// jwk.Cache shows its set but refreshes on its own schedule, reports
// failures to an error sink only, and has key types of its own. go-oidc
// reads the discovery document; the key set is one GET.

// keySet is an issuer's keys as last fetched.
type keySet struct {
	keys []jose.JSONWebKey
	// algs are the algorithms the issuer signs with: those its discovery
	// document lists (RS256 when it lists none, as OIDC says) that are
	// asymmetric.
	algs []jose.SignatureAlgorithm
}

// find returns the keys that may have signed a token with key id kid and
// algorithm alg: the one with that id, or every key when the token names
// none; never a key whose own alg or use says otherwise.
func (s *keySet) find(kid string, alg jose.SignatureAlgorithm) []jose.JSONWebKey {
	var found []jose.JSONWebKey
	for _, k := range s.keys {
		if (kid == "" || k.KeyID == kid) && (k.Algorithm == "" || k.Algorithm == string(alg)) {
			found = append(found, k)
		}
	}
	return found
}

// fetch is a fetch of the keys under way, which every request that needs
// it waits for.
type fetch struct {
	done chan struct{}
	err  error
}

// issuer is one trusted issuer and its cached keys.
type issuer struct {
	opts        IssuerOptions
	client      *http.Client
	minInterval time.Duration
	timeout     time.Duration
	now         func() time.Time
	log         *zap.Logger
	tracer      trace.Tracer
	observe     func(issuer string, err error)
	// base is the parent of every fetch: cancelled when the service stops.
	base context.Context

	keys atomic.Pointer[keySet]
	// epoch changes when a fetch drops a key: what was verified with the
	// old set is verified again.
	epoch atomic.Uint64

	mu       sync.Mutex
	inflight *fetch
	lastTry  time.Time
}

// errThrottled means the keys were fetched too recently to fetch again.
var errThrottled = errors.New("the keys were fetched moments ago")

func newIssuer(base context.Context, o IssuerOptions, opts Options, now func() time.Time, log *zap.Logger, tracer trace.Tracer, observe func(string, error)) (*issuer, error) {
	client, err := newHTTPClient(o, opts.Timeout)
	if err != nil {
		return nil, err
	}
	return &issuer{opts: o, client: client, minInterval: opts.MinRefreshInterval, timeout: opts.Timeout,
		now: now, log: log.With(zap.String("issuer", o.URL)), tracer: tracer, observe: observe, base: base}, nil
}

// newHTTPClient is the client of an issuer's discovery and key set: its CA
// file's roots, its bearer token, a deadline, no redirects, and a bound on
// what it reads.
func newHTTPClient(o IssuerOptions, timeout time.Duration) (*http.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pool, err := tlsca.Pool(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("issuer %s: ca-file: %w", o.URL, err)
		}
		transport.TLSClientConfig.RootCAs = pool
	}
	if o.TokenFile != "" {
		// Read once now, so that a wrong path fails the start, not the
		// first fetch.
		if _, err := readBearer(o.TokenFile); err != nil {
			return nil, fmt.Errorf("issuer %s: discovery-token-file: %w", o.URL, err)
		}
	}
	return &http.Client{
		Transport: &issuerTransport{next: transport, tokenFile: o.TokenFile},
		Timeout:   timeout,
		// A redirect could take the bearer token elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

func readBearer(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", errors.New("the file is empty")
	}
	return token, nil
}

// issuerTransport sends the bearer token of tokenFile, read at each
// request (the kubelet rotates a projected token), over HTTPS only, and
// bounds the bodies it hands on.
type issuerTransport struct {
	next      http.RoundTripper
	tokenFile string
}

func (t *issuerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return nil, fmt.Errorf("refusing to fetch %s: not https", req.URL.Redacted())
	}
	if t.tokenFile != "" {
		token, err := readBearer(t.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("discovery-token-file: %w", err)
		}
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	// A read past the limit fails (*http.MaxBytesError) rather than
	// truncating: a cut document must not parse.
	resp.Body = http.MaxBytesReader(nil, resp.Body, maxDocumentBytes)
	return resp, nil
}

// refresh fetches the keys unless a fetch started less than minInterval
// ago (errThrottled); a fetch under way is joined, not repeated. It waits
// for the fetch at most until ctx ends; the fetch itself goes on, bounded
// by its own deadline, for the requests after.
func (i *issuer) refresh(ctx context.Context) error {
	i.mu.Lock()
	f := i.inflight
	if f == nil {
		if !i.lastTry.IsZero() && i.now().Sub(i.lastTry) < i.minInterval {
			i.mu.Unlock()
			return errThrottled
		}
		f = &fetch{done: make(chan struct{})}
		i.inflight, i.lastTry = f, i.now()
		go i.run(f)
	}
	i.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retryAfter is how long until the next fetch may start.
func (i *issuer) retryAfter() time.Duration {
	i.mu.Lock()
	defer i.mu.Unlock()
	return max(i.lastTry.Add(i.minInterval).Sub(i.now()), time.Second)
}

func (i *issuer) run(f *fetch) {
	// Discovery, then the key set: two requests, each bounded by timeout.
	ctx, cancel := context.WithTimeout(i.base, 2*i.timeout)
	defer cancel()
	ks, err := i.fetchKeys(ctx)
	if err == nil {
		if old := i.keys.Swap(ks); old != nil && dropped(old, ks) {
			i.epoch.Add(1)
		}
	} else if i.keys.Load() != nil {
		i.log.Warn("JWT issuer's keys could not be fetched; the cached keys stay in use", zap.Error(err))
	} else {
		i.log.Warn("JWT issuer's keys could not be fetched and none are cached: its tokens are answered 503 until a fetch succeeds", zap.Error(err))
	}
	i.observe(i.opts.URL, err)
	i.mu.Lock()
	f.err, i.inflight = err, nil
	i.mu.Unlock()
	close(f.done)
}

// dropped reports whether a key of old is not in cur.
func dropped(old, cur *keySet) bool {
	for _, o := range old.keys {
		if !slices.ContainsFunc(cur.keys, func(k jose.JSONWebKey) bool { return sameKey(o, k) }) {
			return true
		}
	}
	return false
}

func sameKey(a, b jose.JSONWebKey) bool {
	if a.KeyID != b.KeyID || a.Algorithm != b.Algorithm {
		return false
	}
	ak, ok := a.Key.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ak.Equal(b.Key)
}

// discovery is what the verifier reads of a discovery document.
type discovery struct {
	JWKSURI string   `json:"jwks_uri"`
	Algs    []string `json:"id_token_signing_alg_values_supported"`
}

// fetchKeys reads the discovery document (go-oidc checks that it is the
// issuer's own) and the key set it names.
func (i *issuer) fetchKeys(ctx context.Context) (ks *keySet, err error) {
	ctx, span := i.tracer.Start(ctx, "oidc fetch keys", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("plantstore.jwt.issuer", i.opts.URL)))
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "fetching the issuer's keys failed")
		}
		span.End()
	}()
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, i.client), i.opts.URL)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	var d discovery
	if err := provider.Claims(&d); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	jwksURL := cmp.Or(i.opts.JWKSURL, d.JWKSURI)
	if err := httpsURL(jwksURL); err != nil {
		return nil, fmt.Errorf("the key set's URL %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURL, nil)
	if err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	// RFC 7517's media type first: the Kubernetes API server serves its key
	// set as that alone and answers 406 to an Accept of application/json.
	req.Header.Set("Accept", "application/jwk-set+json, application/json;q=0.9")
	resp, err := i.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("key set: %s answered %s", req.URL.Redacted(), resp.Status)
	}
	keys, err := parseKeySet(body)
	if err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	algs := []jose.SignatureAlgorithm{jose.RS256}
	if len(d.Algs) > 0 {
		algs = nil
		for _, a := range d.Algs {
			if slices.Contains(asymmetric, jose.SignatureAlgorithm(a)) {
				algs = append(algs, jose.SignatureAlgorithm(a))
			}
		}
		if len(algs) == 0 {
			return nil, errors.New("discovery: the issuer signs with no algorithm plantstore accepts (RS*, PS*, ES*, EdDSA)")
		}
	}
	span.SetAttributes(attribute.Int("plantstore.jwt.keys", len(keys)))
	return &keySet{keys: keys, algs: algs}, nil
}

// parseKeySet reads a JWKS, keeping the public signing keys go-jose knows
// and skipping others, as RFC 7517 section 5 asks. None left is an error.
func parseKeySet(body []byte) ([]jose.JSONWebKey, error) {
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON key set: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, r := range raw.Keys {
		var k jose.JSONWebKey
		if err := json.Unmarshal(r, &k); err != nil {
			continue // an unknown key type, or a key go-jose refuses
		}
		if !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if k.Algorithm != "" && !slices.Contains(asymmetric, jose.SignatureAlgorithm(k.Algorithm)) {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no public signing key plantstore can use in the key set")
	}
	return keys, nil
}
