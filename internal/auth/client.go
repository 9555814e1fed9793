package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/linefile"
)

// Scope is a set of permissions a token grants.
type Scope uint8

// The scopes of the contract (section 10).
const (
	ScopeRead  Scope = 1 << iota // plants:read: GET /plants, GET /plants/{id}
	ScopeWrite                   // plants:write: POST /plants, DELETE /plants/{id}

	// AllScopes is what a line without scopes= grants, as in 1.0.0.
	AllScopes = ScopeRead | ScopeWrite
)

var scopeNames = []struct {
	scope Scope
	name  string
}{{ScopeRead, "plants:read"}, {ScopeWrite, "plants:write"}}

// String is the scopes' names, comma-separated.
func (s Scope) String() string {
	var names []string
	for _, n := range scopeNames {
		if s&n.scope != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ",")
}

// Has reports whether s grants every scope of need.
func (s Scope) Has(need Scope) bool { return s&need == need }

// Rate is a request rate: Count requests each Period, and up to Burst at
// once. The zero Rate means "none given".
type Rate struct {
	Count  int
	Period time.Duration
	Burst  int
}

// IsZero reports whether r is the zero Rate.
func (r Rate) IsZero() bool { return r == Rate{} }

// String is the rate in the tokens file's form, with its burst.
func (r Rate) String() string {
	if r.IsZero() {
		return "none"
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Period]
	return fmt.Sprintf("%d/%s burst %d", r.Count, unit, r.Burst)
}

// maxCount bounds rate and burst counts, far above any real limit and far
// below what the arithmetic on them could overflow.
const maxCount = 1_000_000_000

// rateUnits are the periods of a rate by their unit.
var rateUnits = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}

// ParseRate parses "<n>/<s|m|h>", n a positive decimal integer; the burst is n.
func ParseRate(v string) (Rate, error) {
	count, unit, _ := strings.Cut(v, "/")
	n, err := parseCount(count)
	period, ok := rateUnits[unit]
	if !ok || err != nil {
		return Rate{}, errors.New("must be <n>/s, <n>/m or <n>/h with n a whole number from 1 to 1000000000")
	}
	return Rate{Count: n, Period: period, Burst: n}, nil
}

// parseCount parses a positive decimal integer of at most maxCount: digits
// only, no sign, no leading zero.
func parseCount(v string) (int, error) {
	if v == "" || len(v) > 10 || v[0] == '0' {
		return 0, errors.New("not a count")
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, errors.New("not a count")
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > maxCount {
		return 0, errors.New("not a count")
	}
	return n, nil
}

// Reserved client names: Unnamed is the client of a line without name=;
// Unauthenticated labels requests that have no client.
const (
	Unnamed         = "unnamed"
	Unauthenticated = "unauthenticated"
	// DevClient is the name of the --dev token's client.
	DevClient = "dev"
)

// Client is who a token identifies and what it may do.
type Client struct {
	// Name is the name= attribute, or Unnamed. It goes to logs, spans and
	// metric labels; the token never does.
	Name string
	// Scopes are the permissions; AllScopes without scopes=.
	Scopes Scope
	// Expires is when the token stops being accepted; zero for never.
	Expires time.Time
	// Rate is the client's rate limit; zero for the service's default.
	Rate Rate
	// key identifies the client's rate-limit budget: its name, or for an
	// unnamed line its token's digest, so unnamed tokens never share one.
	key string
}

// Key identifies the client's rate-limit budget, shared by every line with
// the client's name. It holds no token.
func (c *Client) Key() string { return c.key }

// Expired reports whether the client's token has expired at now.
func (c *Client) Expired(now time.Time) bool {
	return !c.Expires.IsZero() && !now.Before(c.Expires)
}

func clientKey(name string, d Digest) string {
	if name != "" && name != Unnamed {
		return "client:" + name
	}
	return "token:" + hex.EncodeToString(d[:16])
}

func unnamedClient(d Digest) *Client {
	return &Client{Name: Unnamed, Scopes: AllScopes, key: clientKey("", d)}
}

// errBlank is ParseLine's answer for a line with no token.
var errBlank = errors.New("blank line")

// ParseLine parses one line of a tokens file as of now: the token (or
// "sha256:" and its digest in hex), then space-separated attributes, each at
// most once:
//
//	name=<client name>       1 to 64 of letters, digits and ._- (default: unnamed)
//	scopes=<comma list>      of plants:read, plants:write (default: both)
//	expires=<RFC 3339 time>  in the future (default: never)
//	rate=<n>/<s|m|h>         (default: the service's default rate)
//	burst=<n>                with rate= (default: n of the rate)
//
// "#" starts a comment. A line with no token answers errBlank. Errors never
// quote the line: it may hold a token.
func ParseLine(line string, now time.Time) (Digest, Client, error) {
	fields := linefile.Fields(line)
	if len(fields) == 0 {
		return Digest{}, Client{}, errBlank
	}
	return parseLineFields(fields, now)
}

// parseLineFields is ParseLine of a line's fields, at least one.
func parseLineFields(fields []string, now time.Time) (Digest, Client, error) {
	d, err := parseToken(fields[0])
	if err != nil {
		return Digest{}, Client{}, err
	}
	c := Client{Name: Unnamed, Scopes: AllScopes}
	seen := map[string]bool{}
	var burst int
	for i, f := range fields[1:] {
		key, value, ok := strings.Cut(f, "=")
		if !ok || value == "" {
			return Digest{}, Client{}, fmt.Errorf("attribute %d after the token is not key=value (name=, scopes=, expires=, rate=, burst=)", i+1)
		}
		switch key {
		case "name", "scopes", "expires", "rate", "burst":
		default:
			return Digest{}, Client{}, fmt.Errorf("attribute %d after the token is unknown: the attributes are name=, scopes=, expires=, rate=, burst=", i+1)
		}
		if seen[key] {
			return Digest{}, Client{}, fmt.Errorf("%s= given twice", key)
		}
		seen[key] = true
		switch key {
		case "expires":
			t, err := time.Parse(time.RFC3339, value)
			if err != nil {
				return Digest{}, Client{}, errors.New("expires= must be an RFC 3339 time such as 2026-12-31T23:59:59Z")
			}
			if !t.After(now) {
				return Digest{}, Client{}, errors.New("expires= is in the past: remove the line, or give a future time")
			}
			c.Expires = t.UTC()
		default:
			if err := clientAttribute(&c, &burst, key, value); err != nil {
				return Digest{}, Client{}, err
			}
		}
	}
	if err := c.setBurst(burst); err != nil {
		return Digest{}, Client{}, err
	}
	c.key = clientKey(c.Name, d)
	return d, c, nil
}

// clientAttribute applies to c an attribute that token and identity lines
// share: name=, scopes=, rate= or burst= (into burst: setBurst applies it
// once the line's rate= is known).
func clientAttribute(c *Client, burst *int, key, value string) error {
	var err error
	switch key {
	case "name":
		if !validName(value) {
			return errors.New("name= must be 1 to 64 of letters, digits and ._-, starting with a letter or digit")
		}
		if value == Unnamed || value == Unauthenticated {
			return fmt.Errorf("name= must not be %q or %q: the service uses them", Unnamed, Unauthenticated)
		}
		c.Name = value
	case "scopes":
		c.Scopes, err = parseScopes(value)
	case "rate":
		if c.Rate, err = ParseRate(value); err != nil {
			return fmt.Errorf("rate= %w", err)
		}
	case "burst":
		if *burst, err = parseCount(value); err != nil {
			return errors.New("burst= must be a whole number from 1 to 1000000000")
		}
	}
	return err
}

// setBurst gives c's rate the line's burst= (0: none).
func (c *Client) setBurst(burst int) error {
	if burst == 0 {
		return nil
	}
	if c.Rate.IsZero() {
		return errors.New("burst= needs rate= on the same line")
	}
	c.Rate.Burst = burst
	return nil
}

// parseToken reads a line's first field: a raw token or "sha256:<hex>".
func parseToken(f string) (Digest, error) {
	var d Digest
	if hexDigest, ok := strings.CutPrefix(f, "sha256:"); ok {
		if len(hexDigest) != hex.EncodedLen(len(d)) {
			return Digest{}, errors.New("a sha256: digest must be 64 hex digits")
		}
		if _, err := hex.Decode(d[:], []byte(hexDigest)); err != nil {
			return Digest{}, errors.New("a sha256: digest must be 64 hex digits")
		}
		return d, nil
	}
	if !IsToken68(f) {
		return Digest{}, errors.New("a token may hold only letters, digits and -._~+/ with trailing =")
	}
	return sha256.Sum256([]byte(f)), nil
}

func parseScopes(v string) (Scope, error) {
	var s Scope
	for _, part := range strings.Split(v, ",") {
		var found Scope
		for _, n := range scopeNames {
			if part == n.name {
				found = n.scope
			}
		}
		switch {
		case found == 0:
			return 0, errors.New("scopes= lists an unknown scope: the scopes are plants:read and plants:write")
		case s&found != 0:
			return 0, errors.New("scopes= lists a scope twice")
		}
		s |= found
	}
	return s, nil
}

// validName: 1 to 64 of [A-Za-z0-9._-], the first a letter or digit. Names
// are metric label values and log fields: nothing that needs escaping.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}
