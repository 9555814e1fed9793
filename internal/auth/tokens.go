// Package auth guards the API with bearer tokens: opaque API keys an operator
// issues, kept only as SHA-256 digests and compared in constant time, and
// JWTs of configured issuers, whose identities map to the same clients.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/plantstore/plantstore/internal/linefile"
)

// Digest is the SHA-256 digest of a token.
type Digest [sha256.Size]byte

// TokenSet is an immutable set of accepted token digests, each with the
// client it identifies, and of identity lines, which map a JWT's identity
// to a client.
type TokenSet struct {
	digests    []Digest
	clients    []*Client // clients[i] is the client of digests[i]
	identities []identityRule
}

// NewTokenSet returns a set accepting the given raw tokens, each with the
// 1.0.0 meaning: an unnamed client with every scope, no expiry and the
// default rate.
func NewTokenSet(tokens ...string) TokenSet {
	s := TokenSet{digests: make([]Digest, 0, len(tokens)), clients: make([]*Client, 0, len(tokens))}
	for _, t := range tokens {
		d := Digest(sha256.Sum256([]byte(t)))
		s.digests = append(s.digests, d)
		s.clients = append(s.clients, unnamedClient(d))
	}
	return s
}

// NewClientTokenSet returns a set accepting token for client c.
func NewClientTokenSet(token string, c Client) TokenSet {
	d := Digest(sha256.Sum256([]byte(token)))
	if c.key == "" {
		c.key = clientKey(c.Name, d)
	}
	return TokenSet{digests: []Digest{d}, clients: []*Client{&c}}
}

// Len is the number of tokens in the set.
func (s TokenSet) Len() int { return len(s.digests) }

// Identities is the number of identity lines in the set.
func (s TokenSet) Identities() int { return len(s.identities) }

// Union returns a set accepting the tokens and identities of both sets.
func (s TokenSet) Union(o TokenSet) TokenSet {
	return TokenSet{digests: slices.Concat(s.digests, o.digests), clients: slices.Concat(s.clients, o.clients),
		identities: slices.Concat(s.identities, o.identities)}
}

// Identify returns the client of the first identity line that id matches,
// or nil.
func (s TokenSet) Identify(id *Identity) *Client {
	for i := range s.identities {
		if s.identities[i].matches(id) {
			return s.identities[i].client
		}
	}
	return nil
}

// IdentityIssuers are the distinct issuers the identity lines name, sorted.
func (s TokenSet) IdentityIssuers() []string {
	issuers := make([]string, 0, len(s.identities))
	for _, r := range s.identities {
		issuers = append(issuers, r.issuer)
	}
	slices.Sort(issuers)
	return slices.Compact(issuers)
}

// Accepts reports whether token is in the set, whatever its expiry.
func (s TokenSet) Accepts(token string) bool { return s.Lookup(token) != nil }

// Lookup returns the client of token, or nil when the set has no such
// token. It hashes the token and compares the digest with every stored one
// without stopping early, so the time taken says nothing about which
// digest, if any, matched. The first line of a token wins.
func (s TokenSet) Lookup(token string) *Client {
	d := sha256.Sum256([]byte(token))
	found, index := 0, 0
	for i := range s.digests {
		eq := subtle.ConstantTimeCompare(d[:], s.digests[i][:])
		index = subtle.ConstantTimeSelect(eq&^found, i, index)
		found |= eq
	}
	if found == 0 {
		return nil
	}
	return s.clients[index]
}

// Names are the distinct client names of the set, sorted.
func (s TokenSet) Names() []string {
	names := make([]string, 0, len(s.clients)+len(s.identities))
	for _, c := range s.clients {
		names = append(names, c.Name)
	}
	for _, r := range s.identities {
		names = append(names, r.client.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ErrNoTokens means a token file holds no token and no identity line.
var ErrNoTokens = errors.New("no tokens in the file")

// ParseTokens reads a token file as of now: one token a line, either the raw
// token or "sha256:" and the hex digest of it, then optional attributes
// (see ParseLine); or an identity line, whose first field is issuer=,
// subject= or claim= (see ParseIdentityLine). "#" starts a comment; blank
// lines are skipped. A line that repeats a token, or an identity, must
// repeat its attributes. The first bad line fails the whole file. Errors
// name the line, never a token.
func ParseTokens(r io.Reader, now time.Time) (TokenSet, error) {
	var s TokenSet
	type seen struct {
		line   int
		client Client
	}
	first := map[Digest]seen{}              // each token's first line
	firstIdentity := map[identityRule]int{} // each identity's first rule, by its match alone
	var identityLines []int                 // the line of each rule
	err := linefile.Read(r, func(n int, fields []string) error {
		if isIdentityLine(fields[0]) {
			rule, err := parseIdentityFields(fields)
			if err != nil {
				return err
			}
			match := identityRule{issuer: rule.issuer, subject: rule.subject, claimName: rule.claimName, claimWant: rule.claimWant}
			if f, ok := firstIdentity[match]; ok {
				if *s.identities[f].client != *rule.client {
					return fmt.Errorf("the identity of line %d again, with other attributes", identityLines[f])
				}
			} else {
				firstIdentity[match] = len(s.identities)
			}
			s.identities = append(s.identities, rule)
			identityLines = append(identityLines, n)
			return nil
		}
		d, c, err := parseLineFields(fields, now)
		if err != nil {
			return err
		}
		if f, ok := first[d]; ok {
			if f.client != c {
				return fmt.Errorf("the token of line %d again, with other attributes", f.line)
			}
		} else {
			first[d] = seen{n, c}
		}
		s.digests = append(s.digests, d)
		s.clients = append(s.clients, &c)
		return nil
	})
	if err != nil {
		return TokenSet{}, err
	}
	if len(s.digests) == 0 && len(s.identities) == 0 {
		return TokenSet{}, ErrNoTokens
	}
	return s, nil
}

// IsToken68 reports whether s has the token68 syntax of RFC 7235, the form a
// bearer token takes in an Authorization header (RFC 6750 b64token).
func IsToken68(s string) bool {
	if s == "" {
		return false
	}
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// GenerateToken returns a new random token of 256 bits, URL-safe.
func GenerateToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
