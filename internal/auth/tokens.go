// Package auth guards the API with bearer tokens: opaque API keys an operator
// issues, kept only as SHA-256 digests and compared in constant time.
package auth

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Digest is the SHA-256 digest of a token.
type Digest [sha256.Size]byte

// TokenSet is an immutable set of accepted token digests.
type TokenSet struct {
	digests []Digest
}

// NewTokenSet returns a set accepting the given raw tokens.
func NewTokenSet(tokens ...string) TokenSet {
	s := TokenSet{digests: make([]Digest, 0, len(tokens))}
	for _, t := range tokens {
		s.digests = append(s.digests, sha256.Sum256([]byte(t)))
	}
	return s
}

// Len is the number of tokens in the set.
func (s TokenSet) Len() int { return len(s.digests) }

// Union returns a set accepting the tokens of both sets.
func (s TokenSet) Union(o TokenSet) TokenSet {
	d := make([]Digest, 0, len(s.digests)+len(o.digests))
	return TokenSet{digests: append(append(d, s.digests...), o.digests...)}
}

// Accepts reports whether token is in the set. It hashes the token and
// compares the digest with every stored one without stopping early, so the
// time taken says nothing about which digest, if any, matched.
func (s TokenSet) Accepts(token string) bool {
	d := sha256.Sum256([]byte(token))
	match := 0
	for i := range s.digests {
		match |= subtle.ConstantTimeCompare(d[:], s.digests[i][:])
	}
	return match == 1
}

// ErrNoTokens means a token file holds no token at all.
var ErrNoTokens = errors.New("no tokens in the file")

// ParseTokens reads a token file: one token a line, either the raw token or
// "sha256:" and the hex digest of it. "#" starts a comment; blank lines are
// skipped. Errors name the line, never its content.
func ParseTokens(r io.Reader) (TokenSet, error) {
	var s TokenSet
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if hexDigest, ok := strings.CutPrefix(line, "sha256:"); ok {
			var d Digest
			if len(hexDigest) != hex.EncodedLen(len(d)) {
				return TokenSet{}, fmt.Errorf("line %d: a sha256: digest must be 64 hex digits", n)
			}
			if _, err := hex.Decode(d[:], []byte(hexDigest)); err != nil {
				return TokenSet{}, fmt.Errorf("line %d: a sha256: digest must be 64 hex digits", n)
			}
			s.digests = append(s.digests, d)
			continue
		}
		if !IsToken68(line) {
			return TokenSet{}, fmt.Errorf("line %d: a token may hold only letters, digits and -._~+/ with trailing =", n)
		}
		s.digests = append(s.digests, sha256.Sum256([]byte(line)))
	}
	if err := sc.Err(); err != nil {
		return TokenSet{}, fmt.Errorf("reading tokens: %w", err)
	}
	if len(s.digests) == 0 {
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
