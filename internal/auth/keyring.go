package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
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

// Replace puts s in force.
func (k *Keyring) Replace(s TokenSet) { k.current.Store(&s) }

// Len is the number of tokens in force.
func (k *Keyring) Len() int { return k.current.Load().Len() }

// ReloadObserver is told of every reload attempt; it may be nil.
type ReloadObserver func(err error)

// FileReloader keeps a keyring in step with a token file. It polls the file's
// content rather than watching inotify events: that follows every way a file
// changes, including the symlink swap by which Kubernetes updates a mounted
// Secret, and costs one small read per interval.
type FileReloader struct {
	path     string
	interval time.Duration
	keyring  *Keyring
	extra    TokenSet // tokens always accepted besides the file's (the --dev token)
	log      *zap.Logger
	observe  ReloadObserver
	lastSum  [sha256.Size]byte
	// failedSum and lastFailure remember the failure being reported, so a
	// broken file is logged once rather than on every poll.
	failedSum   [sha256.Size]byte
	lastFailure string
}

// LoadFile reads the token file once, returns a keyring with its tokens plus
// extra, and a reloader that keeps the keyring up to date once run.
func LoadFile(path string, interval time.Duration, extra TokenSet, log *zap.Logger, observe ReloadObserver) (*Keyring, *FileReloader, error) {
	if observe == nil {
		observe = func(error) {}
	}
	if interval <= 0 {
		// time.NewTicker would panic in Run, after the application started.
		return nil, nil, fmt.Errorf("the auth tokens reload interval must be positive, got %v", interval)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the auth tokens file: %w", err)
	}
	set, err := ParseTokens(bytes.NewReader(data), time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("auth tokens file %s: %w", path, err)
	}
	k := NewKeyring(set.Union(extra))
	r := &FileReloader{path: path, interval: interval, keyring: k, extra: extra,
		log: log, observe: observe, lastSum: sha256.Sum256(data)}
	return k, r, nil
}

// Run rereads the file every interval until ctx ends. A file that cannot be
// read or no longer parses leaves the set in force and logs an error.
func (r *FileReloader) Run(ctx context.Context) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.reload()
		}
	}
}

func (r *FileReloader) reload() {
	data, err := os.ReadFile(r.path)
	if err != nil {
		// Report a failure once, not on every poll while it lasts.
		if msg := err.Error(); msg != r.lastFailure {
			r.lastFailure = msg
			r.log.Error("auth tokens file unreadable; keeping the tokens in force",
				zap.String("path", r.path), zap.Error(err))
			r.observe(err)
		}
		return
	}
	sum := sha256.Sum256(data)
	switch sum {
	case r.lastSum: // unchanged, or back to the set in force
		r.failedSum, r.lastFailure = [sha256.Size]byte{}, ""
		return
	case r.failedSum: // the broken content already reported
		return
	}
	set, err := ParseTokens(bytes.NewReader(data), time.Now())
	if err != nil {
		r.failedSum, r.lastFailure = sum, err.Error()
		r.log.Error("auth tokens file no longer parses; refused as a whole, the last good tokens stay in force",
			zap.String("path", r.path), zap.Error(err))
		r.observe(err)
		return
	}
	r.lastSum, r.failedSum, r.lastFailure = sum, [sha256.Size]byte{}, ""
	r.keyring.Replace(set.Union(r.extra))
	r.log.Info("auth tokens reloaded", zap.String("path", r.path), zap.Int("tokens", set.Len()), zap.Strings("clients", set.Names()))
	r.observe(nil) // after the log, so that whoever is told finds the entry
}

// Options configure where tokens come from.
type Options struct {
	// TokensFile is the file of accepted tokens; it is reread every
	// ReloadInterval.
	TokensFile     string
	ReloadInterval time.Duration
	// Dev adds a random token, printed once at start.
	Dev bool
}
