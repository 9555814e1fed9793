package auth

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/apierror"
)

// Failure reasons, as counted by telemetry.
const (
	ReasonMissing   = "missing"
	ReasonMalformed = "malformed"
	ReasonRejected  = "rejected"
	ReasonExpired   = "expired"
	ReasonScope     = "insufficient_scope"
)

// Verifier finds the client a token identifies, nil when the token is not
// accepted.
type Verifier interface {
	Lookup(token string) *Client
}

// FailureObserver is told why a request was refused; it may be nil.
type FailureObserver func(reason string)

const (
	challenge        = `Bearer realm="plantstore"`
	challengeInvalid = `Bearer realm="plantstore", error="invalid_token"`
)

// Middleware returns a middleware that lets a request through only with an
// accepted, unexpired bearer token (RFC 6750), with its client in the
// request's context (ClientFrom), and otherwise answers 401 with a
// WWW-Authenticate challenge and the contract's Error body.
func Middleware(v Verifier, onFailure FailureObserver) func(http.Handler) http.Handler {
	if onFailure == nil {
		onFailure = func(string) {}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, reason := bearerToken(r.Header.Values("Authorization"))
			switch {
			case reason == ReasonMissing:
				onFailure(reason)
				w.Header().Set("WWW-Authenticate", challenge)
				apierror.Write(w, apierror.New(apierror.CredentialsMissing,
					"credentials missing: send Authorization: Bearer <token>"))
			case reason == ReasonMalformed:
				onFailure(reason)
				w.Header().Set("WWW-Authenticate", challenge)
				apierror.Write(w, apierror.New(apierror.MalformedAuth,
					"malformed Authorization header: expected Bearer followed by one token"))
			default:
				c := v.Lookup(token)
				switch {
				case c == nil:
					onFailure(ReasonRejected)
					w.Header().Set("WWW-Authenticate", challengeInvalid)
					apierror.Write(w, apierror.New(apierror.TokenRejected, "the bearer token is not accepted"))
				case c.Expired(time.Now()):
					onFailure(ReasonExpired)
					w.Header().Set("WWW-Authenticate", challengeInvalid)
					apierror.Write(w, apierror.New(apierror.TokenRejected, "the bearer token has expired"))
				default:
					next.ServeHTTP(w, r.WithContext(WithClient(r.Context(), c)))
				}
			}
		})
	}
}

type clientKeyType struct{}

// ClientFrom returns the client Middleware authenticated the request as, or
// nil.
func ClientFrom(ctx context.Context) *Client {
	c, _ := ctx.Value(clientKeyType{}).(*Client)
	return c
}

// WithClient returns ctx carrying c, as Middleware passes it on.
func WithClient(ctx context.Context, c *Client) context.Context {
	return context.WithValue(ctx, clientKeyType{}, c)
}

// Require returns a middleware that lets a request through only when its
// client (put in the context by Middleware, which must come first) has the
// scope, and otherwise answers 403 with an insufficient_scope challenge
// (RFC 6750). A request without a client passes: authenticating is
// Middleware's job, and a router without it has no authentication at all.
func Require(scope Scope, onFailure FailureObserver) func(http.Handler) http.Handler {
	if onFailure == nil {
		onFailure = func(string) {}
	}
	challengeScope := []string{`Bearer realm="plantstore", error="insufficient_scope", scope="` + scope.String() + `"`}
	msg := "the bearer token lacks the scope " + scope.String() + " this operation needs"
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c := ClientFrom(r.Context()); c != nil && !c.Scopes.Has(scope) {
				onFailure(ReasonScope)
				w.Header()["Www-Authenticate"] = challengeScope
				apierror.Write(w, apierror.New(apierror.InsufficientScope, msg))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// bearerToken extracts the token from the Authorization header values. The
// scheme is matched case-insensitively (RFC 7235); exactly one header, one
// scheme and one token68 are allowed.
func bearerToken(values []string) (token, reason string) {
	switch len(values) {
	case 0:
		return "", ReasonMissing
	case 1:
	default:
		return "", ReasonMalformed
	}
	scheme, rest, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ReasonMalformed
	}
	token = strings.TrimLeft(rest, " ")
	if !IsToken68(token) {
		return "", ReasonMalformed
	}
	return token, ""
}
