package auth

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/server"
)

// DevToken is the token generated in development mode, or empty.
type DevToken string

// Authenticate is the bearer middleware: it refuses a request without an
// accepted token and names the client for what follows.
type Authenticate func(http.Handler) http.Handler

// Authorize returns the middleware requiring a scope of the client that
// Authenticate accepted.
type Authorize func(Scope) func(http.Handler) http.Handler

// Result is what the auth module provides.
type Result struct {
	fx.Out

	Keyring      *Keyring
	DevToken     DevToken
	Authenticate Authenticate
	Authorize    Authorize
	// Announce prints the development token once the API listens.
	Announce server.Announce
}

// Params are what the auth module is built from; without fx, fill it in
// (Lifecycle with fxtest's or an app's). JWT is the verifier of JWT bearer
// credentials, nil when no issuer is configured.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Options   Options
	Log       *zap.Logger
	Registry  prometheus.Registerer
	JWT       JWTVerifier `optional:"true"`
}

// New loads the tokens the options name and starts the file reloader with
// the application; with a JWT verifier, it also accepts the JWTs it
// verifies, mapped to clients by the tokens file's identity lines. Without
// tokens and without development mode it fails.
func New(p Params) (Result, error) {
	lc, o, log, reg, jwt := p.Lifecycle, p.Options, p.Log, p.Registry, p.JWT
	log = log.Named("auth")
	var keyring *Keyring
	metrics, err := NewMetrics(reg, func() int { return keyring.Len() })
	if err != nil {
		return Result{}, err
	}
	var extra TokenSet
	var dev DevToken
	if o.Dev {
		token, err := GenerateToken()
		if err != nil {
			return Result{}, err
		}
		extra, dev = NewClientTokenSet(token, Client{Name: DevClient, Scopes: AllScopes}), DevToken(token)
	}
	switch {
	case o.TokensFile != "":
		k, reloader, err := LoadFile(o.TokensFile, o.ReloadInterval, extra, log, metrics.Reload)
		if err != nil {
			return Result{}, err
		}
		keyring = k
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		lc.Append(fx.StartStopHook(func() { wg.Go(func() { reloader.Run(ctx) }) }, func() { cancel(); wg.Wait() }))
	case o.Dev:
		keyring = NewKeyring(extra)
	default:
		return Result{}, errors.New("no API tokens configured: set --auth-tokens-file or pass --dev")
	}
	warnUnknownIssuers(keyring, jwt, log)
	announce := func(string) {}
	if dev != "" {
		announce = func(addr string) { PrintDevBanner(os.Stderr, dev, addr, o.DocsPath) }
	}
	authenticate := Middleware(keyring, metrics.Failure)
	if jwt != nil {
		authenticate = JWTMiddleware(keyring, keyring, jwt, metrics.Failure)
	}
	return Result{Keyring: keyring, DevToken: dev, Authenticate: authenticate,
		Authorize: func(s Scope) func(http.Handler) http.Handler { return Require(s, metrics.Failure) },
		Announce:  announce}, nil
}

// warnUnknownIssuers logs the issuers that identity lines name and no
// configured issuer is: those lines can never match.
func warnUnknownIssuers(k *Keyring, jwt JWTVerifier, log *zap.Logger) {
	var trusted []string
	if jwt != nil {
		trusted = jwt.Issuers()
	}
	for _, iss := range k.IdentityIssuers() {
		if !slices.Contains(trusted, iss) {
			log.Warn("identity lines of the tokens file name an issuer that is not configured (--auth-jwt-issuers-file); they match no token",
				zap.String("issuer", iss))
		}
	}
}

// Module provides the keyring and the bearer middleware.
var Module = fx.Module("auth", fx.Provide(New))
