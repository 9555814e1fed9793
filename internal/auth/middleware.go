package auth

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
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
	// ReasonNoClient: a verified JWT whose identity no identity line maps.
	ReasonNoClient = "no_client"
	// ReasonIssuerUnavailable: a JWT whose issuer cannot be reached, with
	// no keys of it cached.
	ReasonIssuerUnavailable = "issuer_unavailable"
)

// Verifier finds the client a token identifies, nil when the token is not
// accepted.
type Verifier interface {
	Lookup(token string) *Client
}

// FailureObserver is told why a request was refused; it may be nil.
type FailureObserver func(reason string)

// IdentityMapper finds the client a verified identity maps to, nil when
// none.
type IdentityMapper interface {
	Identify(id *Identity) *Client
}

const (
	challenge        = `Bearer realm="plantstore"`
	challengeInvalid = `Bearer realm="plantstore", error="invalid_token"`
	// challengeNoClient has no scope=: no scope would help.
	challengeNoClient = `Bearer realm="plantstore", error="insufficient_scope"`
)

// Middleware returns a middleware that lets a request through only with an
// accepted, unexpired bearer token (RFC 6750), with its client in the
// request's context (ClientFrom), and otherwise answers 401 with a
// WWW-Authenticate challenge and the contract's Error body.
func Middleware(v Verifier, onFailure FailureObserver) func(http.Handler) http.Handler {
	return JWTMiddleware(v, nil, nil, onFailure)
}

// JWTMiddleware is Middleware that also accepts JWTs (contract section
// 12): a bearer token that is no API key of v goes to jwt, and the identity
// it proves to the client ids maps it to. The API keys are looked up first,
// so every token 1.1.0 accepted is accepted as before, and with jwt nil
// every answer is Middleware's. A JWT failing a check is a 401 saying
// which; a verified identity no line maps is a 403 40302; an issuer that
// cannot be reached with no keys cached a 503 50302 with Retry-After.
func JWTMiddleware(v Verifier, ids IdentityMapper, jwt JWTVerifier, onFailure FailureObserver) func(http.Handler) http.Handler {
	if onFailure == nil {
		onFailure = func(string) {}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, reason := bearerToken(r.Header.Values("Authorization"))
			switch {
			case reason == ReasonMissing:
				refuse(w, onFailure, reason, challenge, apierror.CredentialsMissing, "credentials missing: send Authorization: Bearer <token>")
			case reason == ReasonMalformed:
				refuse(w, onFailure, reason, challenge, apierror.MalformedAuth, "malformed Authorization header: expected Bearer followed by one token")
			default:
				c := v.Lookup(token)
				switch {
				case c == nil && jwt != nil:
					serveJWT(w, r, next, token, jwt, ids, onFailure)
				case c == nil:
					refuse(w, onFailure, ReasonRejected, challengeInvalid, apierror.TokenRejected, "the bearer token is not accepted")
				case c.Expired(time.Now()):
					refuse(w, onFailure, ReasonExpired, challengeInvalid, apierror.TokenRejected, "the bearer token has expired")
				default:
					next.ServeHTTP(w, r.WithContext(WithClient(r.Context(), c)))
				}
			}
		})
	}
}

// serveJWT authenticates a request whose token is no API key by the JWT
// verifier.
func serveJWT(w http.ResponseWriter, r *http.Request, next http.Handler, token string, jwt JWTVerifier, ids IdentityMapper, onFailure FailureObserver) {
	id, err := jwt.Verify(r.Context(), token)
	var rejected *TokenRejectedError
	var unavailable *IssuerUnavailableError
	switch {
	case err == nil:
		var c *Client
		if ids != nil {
			c = ids.Identify(id)
		}
		if c == nil {
			refuse(w, onFailure, ReasonNoClient, challengeNoClient, apierror.NoClient,
				"the token is valid, but no client is mapped to its identity: an operator must add an identity line for it to plantstore's tokens file")
			return
		}
		next.ServeHTTP(w, r.WithContext(WithClient(r.Context(), c)))
	case errors.As(err, &rejected):
		reason := ReasonRejected
		if rejected.Expired {
			reason = ReasonExpired
		}
		refuse(w, onFailure, reason, challengeInvalid, apierror.TokenRejected, rejected.Message)
	case errors.As(err, &unavailable):
		onFailure(ReasonIssuerUnavailable)
		w.Header().Set("Retry-After", strconv.FormatInt(retrySeconds(unavailable.RetryAfter), 10))
		apierror.Write(w, apierror.New(apierror.IssuerUnavailable,
			"the token's issuer cannot be reached to fetch its signing keys; retry after Retry-After seconds"))
	default:
		// ErrNotJWT, or anything unforeseen: the token is not accepted,
		// exactly as 1.1.0 says it.
		refuse(w, onFailure, ReasonRejected, challengeInvalid, apierror.TokenRejected, "the bearer token is not accepted")
	}
}

// refuse answers a request refused for reason: the challenge and the
// Error body of code with msg.
func refuse(w http.ResponseWriter, onFailure FailureObserver, reason, challenge string, code apierror.Code, msg string) {
	onFailure(reason)
	w.Header().Set("WWW-Authenticate", challenge)
	apierror.Write(w, apierror.New(code, msg))
}

// retrySeconds is d in whole seconds, rounded up, at least 1.
func retrySeconds(d time.Duration) int64 {
	return max(int64(math.Ceil(d.Seconds())), 1)
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
