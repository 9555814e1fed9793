package auth

import (
	"bytes"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/filewatch"
)

// Keyring is the token set in force. It is swapped atomically on reload, so
// a request sees either the old set or the new one, never a mix.
type Keyring struct {
	current atomic.Pointer[TokenSet]
}

// NewKeyring returns a keyring holding s.
func NewKeyring(s TokenSet) *Keyring {
	k := &Keyring{}
	k.current.Store(&s)
	return k
}

// Accepts reports whether the set in force accepts token, whatever its expiry.
func (k *Keyring) Accepts(token string) bool { return k.current.Load().Accepts(token) }

// Lookup returns the client of token in the set in force, or nil.
func (k *Keyring) Lookup(token string) *Client { return k.current.Load().Lookup(token) }

// Identify returns the client the set in force maps id to, or nil.
func (k *Keyring) Identify(id *Identity) *Client { return k.current.Load().Identify(id) }

// IdentityIssuers are the issuers the identity lines in force name.
func (k *Keyring) IdentityIssuers() []string { return k.current.Load().IdentityIssuers() }

// Replace puts s in force.
func (k *Keyring) Replace(s TokenSet) { k.current.Store(&s) }

// Len is the number of tokens in force.
func (k *Keyring) Len() int { return k.current.Load().Len() }

// ReloadObserver is told of every reload attempt; it may be nil.
type ReloadObserver func(err error)

// LoadFile reads the token file once, returns a keyring with its tokens plus
// extra, and a reloader that keeps the keyring in step with the file once
// run: a file that cannot be read or no longer parses leaves the set in
// force and logs an error, once.
func LoadFile(path string, interval time.Duration, extra TokenSet, log *zap.Logger, observe ReloadObserver) (*Keyring, *filewatch.Reloader, error) {
	k := new(Keyring)
	r, err := filewatch.Load(filewatch.Options{What: "auth tokens", Path: path, Interval: interval,
		Unreadable: "auth tokens file unreadable; keeping the tokens in force",
		Refused:    "auth tokens file no longer parses; refused as a whole, the last good tokens stay in force",
		Reloaded:   "auth tokens reloaded",
	}, func(data []byte) ([]zap.Field, error) {
		set, err := ParseTokens(bytes.NewReader(data), time.Now())
		if err != nil {
			return nil, err
		}
		k.Replace(set.Union(extra))
		return []zap.Field{zap.Int("tokens", set.Len()), zap.Int("identities", set.Identities()), zap.Strings("clients", set.Names())}, nil
	}, log, observe)
	if err != nil {
		return nil, nil, err
	}
	return k, r, nil
}

// Options configure where tokens come from.
type Options struct {
	// TokensFile is the file of accepted tokens; it is reread every
	// ReloadInterval.
	TokensFile     string
	ReloadInterval time.Duration
	// Dev adds a random token, printed once at start.
	Dev bool
	// DocsPath is the path of the API reference page, which the start
	// banner of Dev links to; empty when the service serves none.
	DocsPath string
}
