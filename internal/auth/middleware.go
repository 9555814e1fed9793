package auth

import (
	"net/http"
	"strings"

	"github.com/plantstore/plantstore/internal/apierror"
)

// Failure reasons, as counted by telemetry.
const (
	ReasonMissing   = "missing"
	ReasonMalformed = "malformed"
	ReasonRejected  = "rejected"
)

// Verifier decides whether a token is accepted.
type Verifier interface {
	Accepts(token string) bool
}

// FailureObserver is told why a request was refused; it may be nil.
type FailureObserver func(reason string)

const (
	challenge        = `Bearer realm="plantstore"`
	challengeInvalid = `Bearer realm="plantstore", error="invalid_token"`
)

// Middleware returns a middleware that lets a request through only with an
// accepted bearer token (RFC 6750), and otherwise answers 401 with a
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
			case !v.Accepts(token):
				onFailure(ReasonRejected)
				w.Header().Set("WWW-Authenticate", challengeInvalid)
				apierror.Write(w, apierror.New(apierror.TokenRejected, "the bearer token is not accepted"))
			default:
				next.ServeHTTP(w, r)
			}
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
