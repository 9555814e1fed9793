package oidcauth

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/plantstore/plantstore/internal/auth"
)

// entry is a verified token: its identity until it expires, as long as its
// issuer's key set has dropped no key since (epoch).
type entry struct {
	id     *auth.Identity
	until  time.Time
	issuer *issuer
	epoch  uint64
}

// cache remembers verified tokens by the SHA-256 of the token, so that
// steady traffic pays a hash and a map lookup, not a signature check. It
// holds at most max entries: only tokens that verified get in, and when it
// is full, expired entries go first, then any. It never holds a failure.
type cache struct {
	mu      sync.RWMutex
	max     int
	entries map[[sha256.Size]byte]*entry
}

func newCache(max int) *cache {
	return &cache{max: max, entries: make(map[[sha256.Size]byte]*entry)}
}

func (c *cache) get(d [sha256.Size]byte) *entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.entries[d]
}

// evictScan bounds the entries looked at for expired ones on an insert
// into a full cache: an insert costs O(1) however large the cache.
const evictScan = 32

func (c *cache) put(d [sha256.Size]byte, e *entry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[d]; !ok && len(c.entries) >= c.max {
		// Map iteration starts at a random place: the entries looked at,
		// and the one evicted when none has expired, are random ones.
		var victim *[sha256.Size]byte
		n := 0
		for k, old := range c.entries {
			if !now.Before(old.until) {
				delete(c.entries, k)
			} else if victim == nil {
				k := k
				victim = &k
			}
			if n++; n == evictScan {
				break
			}
		}
		if len(c.entries) >= c.max && victim != nil {
			delete(c.entries, *victim)
		}
	}
	c.entries[d] = e
}

func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
