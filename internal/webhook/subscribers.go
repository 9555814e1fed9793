package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/filewatch"
	"github.com/plantstore/plantstore/internal/linefile"
)

// Subscriber is one line of the subscribers file.
type Subscriber struct {
	// URL is where events are POSTed (http or https).
	URL *url.URL
	// Secrets sign every delivery; two while a secret is rotated.
	Secrets []Secret
	// Key identifies the subscriber's deliveries in the outbox: the first 16
	// hex digits of the SHA-256 of its URL, so that a reordered or edited
	// file keeps the deliveries of an unchanged URL, and a secret's rotation
	// does not disturb them.
	Key string
	// Name labels the subscriber in metrics, logs and spans: the URL's
	// host[:port], never its credentials, path or query; "#2", "#3" follow a
	// host already named.
	Name string
}

// maxSubscribers bounds the file, and so the metric labels it names.
const maxSubscribers = 100

// ParseSubscribers reads a subscribers file: one `URL secret [secret]` per
// line, # starting a comment, blank lines ignored. Any fault refuses the
// whole file, with its line number: the URL must be absolute http or https
// with a host, each secret whsec_<base64> of at least 24 bytes, and no URL
// may appear twice.
func ParseSubscribers(r io.Reader) ([]Subscriber, error) {
	var subs []Subscriber
	seen := map[string]int{}
	names := map[string]int{}
	err := linefile.Read(r, func(n int, fields []string) error {
		if len(fields) < 2 || len(fields) > 3 {
			return fmt.Errorf("want `URL secret [secret]`, got %d fields", len(fields))
		}
		u, err := url.Parse(fields[0])
		if err != nil {
			return errors.New("the URL does not parse") // the error would quote it, credentials and all
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
			return errors.New("the URL must be absolute http:// or https:// with a host and no fragment")
		}
		if first, dup := seen[u.String()]; dup {
			return fmt.Errorf("the URL of line %d again", first)
		}
		seen[u.String()] = n
		sub := Subscriber{URL: u}
		for i, s := range fields[1:] {
			key, err := ParseSecret(s)
			if err != nil {
				return fmt.Errorf("secret %d: %w", i+1, err)
			}
			sub.Secrets = append(sub.Secrets, key)
		}
		sum := sha256.Sum256([]byte(u.String()))
		sub.Key = hex.EncodeToString(sum[:8])
		sub.Name = u.Host
		if names[u.Host]++; names[u.Host] > 1 {
			sub.Name += "#" + strconv.Itoa(names[u.Host])
		}
		subs = append(subs, sub)
		if len(subs) > maxSubscribers {
			return fmt.Errorf("more than %d subscribers", maxSubscribers)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return subs, nil
}

// Subscribers is the subscriber set in force, swapped whole on reload.
type Subscribers struct {
	current atomic.Pointer[[]Subscriber]
	// changed is told each set put in force (the store's recording switch).
	changed func([]Subscriber)
}

// NewSubscribers returns a set holding subs; changed, if not nil, is called
// now and on every Replace.
func NewSubscribers(subs []Subscriber, changed func([]Subscriber)) *Subscribers {
	s := &Subscribers{changed: changed}
	s.Replace(subs)
	return s
}

// All returns the subscribers in force; the caller must not change them.
func (s *Subscribers) All() []Subscriber { return *s.current.Load() }

// ByKey returns the subscriber in force whose Key is key.
func (s *Subscribers) ByKey(key string) (Subscriber, bool) {
	for _, sub := range s.All() {
		if sub.Key == key {
			return sub, true
		}
	}
	return Subscriber{}, false
}

// Keys returns the keys of the subscribers in force.
func (s *Subscribers) Keys() []string {
	all := s.All()
	keys := make([]string, len(all))
	for i, sub := range all {
		keys[i] = sub.Key
	}
	return keys
}

// Replace puts subs in force.
func (s *Subscribers) Replace(subs []Subscriber) {
	s.current.Store(&subs)
	if s.changed != nil {
		s.changed(subs)
	}
}

// LoadFile reads the subscribers file once and returns its set and a
// reloader that keeps it in step with the file once run, as the auth tokens
// file is kept: a file that no longer reads or parses leaves the set in
// force and is reported once. observe (may be nil) is told of every reload
// attempt.
func LoadFile(path string, interval time.Duration, changed func([]Subscriber), log *zap.Logger, observe func(error)) (*Subscribers, *filewatch.Reloader, error) {
	subs := &Subscribers{changed: changed} // the file's first reading puts its list in force
	r, err := filewatch.Load(filewatch.Options{What: "webhook subscribers", Path: path, Interval: interval,
		Unreadable: "webhook subscribers file unreadable; keeping the subscribers in force",
		Refused:    "webhook subscribers file refused as a whole; keeping the last good subscribers in force",
		Reloaded:   "webhook subscribers reloaded",
	}, func(data []byte) ([]zap.Field, error) {
		list, err := ParseSubscribers(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		subs.Replace(list)
		return []zap.Field{zap.Strings("subscribers", names(list))}, nil
	}, log, observe)
	if err != nil {
		return nil, nil, err
	}
	return subs, r, nil
}

func names(subs []Subscriber) []string {
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.Name
	}
	return out
}
