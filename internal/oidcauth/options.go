// Package oidcauth verifies JWT bearer credentials of configured OIDC
// issuers (a Kubernetes cluster's service-account issuer among them)
// through their discovery documents and key sets, and caches what it
// verified until the token expires.
package oidcauth

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/linefile"
)

// Options configure the verifier. No issuer means no JWT is accepted and
// nothing of this package runs.
type Options struct {
	// IssuersFile names the issuers file; Parse of the config reads it into
	// Issuers at start.
	IssuersFile string
	Issuers     []IssuerOptions
	// Leeway is the clock skew allowed on exp, nbf and iat.
	Leeway time.Duration
	// RefreshInterval is how often each issuer's keys are fetched again.
	RefreshInterval time.Duration
	// MinRefreshInterval is the least time between two fetches of one
	// issuer's keys: for a token with an unknown key id, or while the
	// issuer cannot be reached.
	MinRefreshInterval time.Duration
	// Timeout bounds one fetch of a discovery document or a key set.
	Timeout time.Duration
	// CacheSize bounds the verified tokens remembered until they expire.
	CacheSize int
}

// IssuerOptions are one issuer of the issuers file.
type IssuerOptions struct {
	// URL is the issuer: the tokens' iss, and where its discovery document
	// is (URL + /.well-known/openid-configuration).
	URL string
	// Audience is the aud a token must carry to be accepted here.
	Audience string
	// CAFile is a PEM bundle to verify the issuer's TLS certificates with,
	// instead of the system's roots (in a pod:
	// /var/run/secrets/kubernetes.io/serviceaccount/ca.crt).
	CAFile string
	// TokenFile is a file whose content is sent as a bearer token with the
	// discovery and key set requests, read again at each (in a pod: its
	// service account token, which the kubelet rotates).
	TokenFile string
	// JWKSURL, when set, replaces the discovery document's jwks_uri.
	JWKSURL string
}

// ReadIssuersFile reads the issuers file at path.
func ReadIssuersFile(path string) ([]IssuerOptions, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the JWT issuers file: %w", err)
	}
	defer f.Close()
	issuers, err := ParseIssuers(f)
	if err != nil {
		return nil, fmt.Errorf("JWT issuers file %s: %w", path, err)
	}
	return issuers, nil
}

// ErrNoIssuers means an issuers file names no issuer.
var ErrNoIssuers = errors.New("no issuer in the file")

// ParseIssuers reads an issuers file: one issuer a line, its URL, then
// space-separated attributes, each at most once:
//
//	audience=<aud>              the audience tokens must carry (required)
//	ca-file=<path>              PEM roots for the issuer's TLS (default: the system's)
//	discovery-token-file=<path> bearer token for the discovery and key set requests
//	jwks-url=<https URL>        instead of the discovery document's jwks_uri
//
// "#" starts a comment; blank lines are skipped. An issuer appears once.
func ParseIssuers(r io.Reader) ([]IssuerOptions, error) {
	var issuers []IssuerOptions
	seen := map[string]int{}
	err := linefile.Read(r, func(n int, fields []string) error {
		iss, err := parseIssuer(fields)
		if err != nil {
			return err
		}
		if first, ok := seen[iss.URL]; ok {
			return fmt.Errorf("the issuer of line %d again", first)
		}
		seen[iss.URL] = n
		issuers = append(issuers, iss)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(issuers) == 0 {
		return nil, ErrNoIssuers
	}
	return issuers, nil
}

func parseIssuer(fields []string) (IssuerOptions, error) {
	iss := IssuerOptions{URL: fields[0]}
	if err := httpsURL(iss.URL); err != nil {
		return IssuerOptions{}, fmt.Errorf("the issuer %w", err)
	}
	seen := map[string]bool{}
	for i, f := range fields[1:] {
		key, value, ok := strings.Cut(f, "=")
		if !ok || value == "" {
			return IssuerOptions{}, fmt.Errorf("attribute %d after the issuer is not key=value (audience=, ca-file=, discovery-token-file=, jwks-url=)", i+1)
		}
		if seen[key] {
			return IssuerOptions{}, fmt.Errorf("%s= given twice", key)
		}
		seen[key] = true
		switch key {
		case "audience":
			iss.Audience = value
		case "ca-file":
			iss.CAFile = value
		case "discovery-token-file":
			iss.TokenFile = value
		case "jwks-url":
			if err := httpsURL(value); err != nil {
				return IssuerOptions{}, fmt.Errorf("jwks-url= %w", err)
			}
			iss.JWKSURL = value
		default:
			return IssuerOptions{}, fmt.Errorf("attribute %d after the issuer is unknown: the attributes are audience=, ca-file=, discovery-token-file=, jwks-url=", i+1)
		}
	}
	if iss.Audience == "" {
		return IssuerOptions{}, errors.New("audience= is required: the audience tokens for plantstore carry (a projected service account token's audience)")
	}
	return iss, nil
}

// httpsURL checks that u is an absolute https URL without query or
// fragment: keys fetched over anything else could be anyone's.
func httpsURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "https" || p.Host == "" || p.RawQuery != "" || p.Fragment != "" || p.User != nil {
		return errors.New("must be an https URL without user, query or fragment")
	}
	return nil
}

// Validate checks the options together; each message names the flag.
func (o Options) Validate() error {
	if len(o.Issuers) == 0 {
		return nil
	}
	var errs []error
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{
		{"--auth-jwt-refresh-interval", o.RefreshInterval},
		{"--auth-jwt-refresh-min-interval", o.MinRefreshInterval},
		{"--auth-jwt-timeout", o.Timeout},
	} {
		if d.d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", d.flag, d.d))
		}
	}
	if o.Leeway < 0 || o.Leeway > 5*time.Minute {
		errs = append(errs, fmt.Errorf("--auth-jwt-leeway must be from 0 to 5m, got %v", o.Leeway))
	}
	if o.MinRefreshInterval > o.RefreshInterval {
		errs = append(errs, fmt.Errorf("--auth-jwt-refresh-min-interval (%v) must not exceed --auth-jwt-refresh-interval (%v)", o.MinRefreshInterval, o.RefreshInterval))
	}
	if o.CacheSize < 1 {
		errs = append(errs, fmt.Errorf("--auth-jwt-cache-size must be 1 or more, got %d", o.CacheSize))
	}
	return errors.Join(errs...)
}
