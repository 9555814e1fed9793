// Package oidcauthtest runs an OIDC issuer for tests: an HTTPS server on
// loopback serving a discovery document and a key set, signing tokens with
// RSA and ECDSA keys it generates, whose keys rotate, and which can go
// down or hang on request.
package oidcauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer is a running test issuer.
type Issuer struct {
	// URL is the issuer (https://127.0.0.1:<port>), CAFile a PEM file of
	// the certificate its server presents.
	URL    string
	CAFile string

	srv *httptest.Server
	// Bearer, when set before the first request, is required on every
	// request for the discovery document and the key set.
	bearer atomic.Pointer[string]
	down   atomic.Bool
	hang   atomic.Bool
	// fetches counts key set requests answered.
	fetches atomic.Int64

	mu        sync.Mutex
	published []key // in the key set
	current   key   // what Sign signs with
	n         int
	release   chan struct{} // closed at Close: hung requests end
}

type key struct {
	kid    string
	alg    jose.SignatureAlgorithm
	signer crypto.Signer
}

// Start starts an issuer with one RSA key, on loopback, closed when the
// test ends.
func Start(t testing.TB) *Issuer {
	t.Helper()
	i := &Issuer{release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", i.serve(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                i.URL,
			"jwks_uri":                              i.URL + "/openid/v1/jwks",
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	}))
	// As the Kubernetes API server serves it (go-restful, Produces
	// application/jwk-set+json): an Accept that allows neither that type
	// nor */* is answered 406.
	mux.HandleFunc("GET /openid/v1/jwks", i.serve(func(w http.ResponseWriter, r *http.Request) {
		if !acceptsJWKS(r.Header.Get("Accept")) {
			http.Error(w, "406: Not Acceptable", http.StatusNotAcceptable)
			return
		}
		i.fetches.Add(1)
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_ = json.NewEncoder(w).Encode(i.keySet())
	}))
	i.srv = httptest.NewTLSServer(mux)
	i.URL = i.srv.URL
	i.CAFile = filepath.Join(t.TempDir(), "issuer-ca.crt")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: i.srv.Certificate().Raw})
	if err := os.WriteFile(i.CAFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	i.current = i.newKey(t, jose.RS256)
	i.published = []key{i.current}
	t.Cleanup(i.Close)
	return i
}

// Close stops the server, ending hung requests first.
func (i *Issuer) Close() {
	i.mu.Lock()
	select {
	case <-i.release:
	default:
		close(i.release)
	}
	i.mu.Unlock()
	i.srv.Close()
}

// acceptsJWKS matches an Accept header against the key set's media type as
// go-restful does: any listed type equal to it or */*, parameters ignored;
// no header at all is */*.
func acceptsJWKS(accept string) bool {
	if accept == "" {
		return true
	}
	for _, t := range strings.Split(accept, ",") {
		t, _, _ = strings.Cut(t, ";")
		if t = strings.TrimSpace(t); t == "*/*" || t == "application/jwk-set+json" {
			return true
		}
	}
	return false
}

func (i *Issuer) serve(h func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if want := i.bearer.Load(); want != nil && r.Header.Get("Authorization") != "Bearer "+*want {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if i.hang.Load() {
			select {
			case <-r.Context().Done():
			case <-i.release:
			}
			return
		}
		if i.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// RequireBearer makes the issuer answer 401 to discovery and key set
// requests without this bearer token.
func (i *Issuer) RequireBearer(token string) { i.bearer.Store(&token) }

// SetDown makes the issuer answer 503 (true) or serve again (false).
func (i *Issuer) SetDown(down bool) { i.down.Store(down) }

// SetHang makes the issuer never answer (true) until the client gives up.
func (i *Issuer) SetHang(hang bool) { i.hang.Store(hang) }

// KeySetFetches is how many times the key set was served.
func (i *Issuer) KeySetFetches() int64 { return i.fetches.Load() }

func (i *Issuer) newKey(t testing.TB, alg jose.SignatureAlgorithm) key {
	t.Helper()
	var signer crypto.Signer
	var err error
	switch alg {
	case jose.RS256:
		signer, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		signer, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("oidcauthtest: no key for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	i.n++
	return key{kid: fmt.Sprintf("key-%d-%s", i.n, alg), alg: alg, signer: signer}
}

// Rotate makes a new key of alg (RS256 or ES256) the one tokens are
// signed with and publishes it; with keepOld the keys published so far stay
// published (a rotation as issuers do it), else they are withdrawn.
func (i *Issuer) Rotate(t testing.TB, alg jose.SignatureAlgorithm, keepOld bool) {
	t.Helper()
	i.mu.Lock()
	defer i.mu.Unlock()
	k := i.newKey(t, alg)
	if !keepOld {
		i.published = nil
	}
	i.published = append(i.published, k)
	i.current = k
}

// SignUnpublished signs with a new key the issuer never publishes: its kid
// is in no key set.
func (i *Issuer) SignUnpublished(t testing.TB, claims map[string]any) string {
	t.Helper()
	i.mu.Lock()
	k := i.newKey(t, jose.RS256)
	i.mu.Unlock()
	return sign(t, k, claims)
}

func (i *Issuer) keySet() jose.JSONWebKeySet {
	i.mu.Lock()
	defer i.mu.Unlock()
	var s jose.JSONWebKeySet
	for _, k := range i.published {
		s.Keys = append(s.Keys, jose.JSONWebKey{Key: k.signer.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
	return s
}

// Claims are a token's claims for subject and audience, valid for an
// hour from now.
func (i *Issuer) Claims(subject, audience string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": i.URL, "sub": subject, "aud": audience,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// Sign signs claims with the current key.
func (i *Issuer) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	i.mu.Lock()
	k := i.current
	i.mu.Unlock()
	return sign(t, k, claims)
}

func sign(t testing.TB, k key, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.signer, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	return signPayload(t, signer, claims)
}

func signPayload(t testing.TB, signer jose.Signer, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	token, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// SignHMACWithPublicKey signs claims with HS256, the secret the current
// key's public key in PEM and DER: the algorithm confusion attack, which
// a verifier that lets the token choose the algorithm accepts.
func (i *Issuer) SignHMACWithPublicKey(t testing.TB, claims map[string]any) (pemSigned, derSigned string) {
	t.Helper()
	i.mu.Lock()
	k := i.current
	i.mu.Unlock()
	der, err := x509.MarshalPKIXPublicKey(k.signer.Public())
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	for _, secret := range [][]byte{pemKey, der} {
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret},
			(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.kid))
		if err != nil {
			t.Fatal(err)
		}
		if pemSigned == "" {
			pemSigned = signPayload(t, signer, claims)
		} else {
			derSigned = signPayload(t, signer, claims)
		}
	}
	return pemSigned, derSigned
}

// Unsigned is claims as a JWT with alg "none" and the current key's kid.
func (i *Issuer) Unsigned(t testing.TB, claims map[string]any) string {
	t.Helper()
	i.mu.Lock()
	kid := i.current.kid
	i.mu.Unlock()
	header, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": kid})
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
}
