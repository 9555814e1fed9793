package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/linefile"
)

// Identity is who a verified JWT says its bearer is. The JWT verifier
// builds it; the tokens file's identity lines map it to a client. Its
// values come from a token: they go to no log, span or metric label.
type Identity struct {
	Issuer  string
	Subject string
	// Expiry is the token's exp claim.
	Expiry time.Time
	// Claims are the token's top-level claims whose value is a string or
	// an array of strings, for the claim= match of identity lines. Read
	// only: a verifier may hand the same Identity to many requests.
	Claims map[string][]string
}

// JWTVerifier verifies a bearer token that is a JWT. Verify returns the
// identity the token proves, or an error: ErrNotJWT when the token is not
// a JWT at all (it is then an unknown API key), a *TokenRejectedError when
// a check failed, an *IssuerUnavailableError when the token cannot be
// checked now.
type JWTVerifier interface {
	Verify(ctx context.Context, token string) (*Identity, error)
	// Issuers are the issuer URLs it trusts.
	Issuers() []string
}

// ErrNotJWT means a bearer token does not have a JWT's form.
var ErrNotJWT = errors.New("not a JWT")

// TokenRejectedError is a JWT that failed a check. Message says which, for
// the caller, and never quotes the token or a claim.
type TokenRejectedError struct {
	Message string
	// Expired is set when the check that failed is the expiry.
	Expired bool
}

func (e *TokenRejectedError) Error() string { return e.Message }

// IssuerUnavailableError means the token's issuer could not be reached and
// no keys of it are cached: the token can be neither accepted nor refused.
type IssuerUnavailableError struct {
	// RetryAfter is when the verifier will try the issuer again.
	RetryAfter time.Duration
	Err        error
}

func (e *IssuerUnavailableError) Error() string {
	return fmt.Sprintf("the issuer cannot be reached and no keys of it are cached: %v", e.Err)
}

func (e *IssuerUnavailableError) Unwrap() error { return e.Err }

// identityRule is an identity line of the tokens file.
type identityRule struct {
	issuer, subject      string
	claimName, claimWant string
	client               *Client
}

// matches reports whether id is the rule's: the same issuer, the subject
// when the rule names one, the claim when it names one (a string claim
// equal to the value, or an array of strings holding it).
func (r *identityRule) matches(id *Identity) bool {
	if id.Issuer != r.issuer || (r.subject != "" && id.Subject != r.subject) {
		return false
	}
	return r.claimName == "" || slices.Contains(id.Claims[r.claimName], r.claimWant)
}

// identityKeys are the attributes that start an identity line.
var identityKeys = []string{"issuer", "subject", "claim"}

// isIdentityLine reports whether a line's first field makes it an identity
// line: issuer=, subject= or claim= with a value. No such field is a
// token68 (an "=" inside one is followed only by "="), so no file that
// 1.1.0 accepted reads differently: there, such a line was an error.
func isIdentityLine(first string) bool {
	key, value, ok := strings.Cut(first, "=")
	return ok && value != "" && slices.Contains(identityKeys, key)
}

// ParseIdentityLine parses an identity line of a tokens file: attributes
// only, in any order, each at most once:
//
//	issuer=<https URL>      the token's iss (required)
//	subject=<sub>           the token's sub, e.g. system:serviceaccount:<namespace>:<name>
//	claim=<name>:<value>    a top-level claim equal to value, or an array of strings holding it
//	name=<client name>      (required) the client, as on a token line
//	scopes=, rate=, burst=  as on a token line
//
// subject=, claim= or both (both must hold). "#" starts a comment. Errors
// never quote the line.
func ParseIdentityLine(line string) (identityRule, error) {
	fields := linefile.Fields(line)
	if len(fields) == 0 {
		return identityRule{}, errBlank
	}
	return parseIdentityFields(fields)
}

// parseIdentityFields is ParseIdentityLine of a line's fields, at least one.
func parseIdentityFields(fields []string) (identityRule, error) {
	const known = "issuer=, subject=, claim=, name=, scopes=, rate=, burst="
	var r identityRule
	c := Client{Scopes: AllScopes}
	seen := map[string]bool{}
	var burst int
	for i, f := range fields {
		key, value, ok := strings.Cut(f, "=")
		if !ok || value == "" {
			return identityRule{}, fmt.Errorf("attribute %d of the identity line is not key=value (%s)", i+1, known)
		}
		switch key {
		case "issuer", "subject", "claim", "name", "scopes", "rate", "burst":
		case "expires":
			return identityRule{}, errors.New("expires= is for token lines: on an identity line the JWT's own expiry applies")
		default:
			return identityRule{}, fmt.Errorf("attribute %d of the identity line is unknown: the attributes are %s", i+1, known)
		}
		if seen[key] {
			return identityRule{}, fmt.Errorf("%s= given twice", key)
		}
		seen[key] = true
		switch key {
		case "issuer":
			u, err := url.Parse(value)
			if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
				return identityRule{}, errors.New("issuer= must be an https URL without query or fragment, as the tokens' iss claim and --auth-jwt-issuers-file spell it")
			}
			r.issuer = value
		case "subject":
			r.subject = value
		case "claim":
			name, want, ok := strings.Cut(value, ":")
			if !ok || want == "" || !validClaimName(name) {
				return identityRule{}, errors.New("claim= must be <claim name>:<value>, the name 1 to 64 of letters, digits and ._-")
			}
			r.claimName, r.claimWant = name, want
		default:
			if err := clientAttribute(&c, &burst, key, value); err != nil {
				return identityRule{}, err
			}
		}
	}
	switch {
	case r.issuer == "":
		return identityRule{}, errors.New("an identity line needs issuer=: a subject is only unique within its issuer")
	case r.subject == "" && r.claimName == "":
		return identityRule{}, errors.New("an identity line needs subject=, claim= or both")
	case c.Name == "":
		return identityRule{}, errors.New("an identity line needs name=: its client's name in logs, metrics and rate limits")
	}
	if err := c.setBurst(burst); err != nil {
		return identityRule{}, err
	}
	c.key = clientKey(c.Name, Digest{})
	r.client = &c
	return r, nil
}

// validClaimName: 1 to 64 of [A-Za-z0-9._-].
func validClaimName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
