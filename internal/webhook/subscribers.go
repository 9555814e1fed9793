package webhook

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
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
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 2 || len(fields) > 3 {
			return nil, fmt.Errorf("line %d: want `URL secret [secret]`, got %d fields", n, len(fields))
		}
		u, err := url.Parse(fields[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: the URL does not parse", n) // the error would quote it, credentials and all
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
			return nil, fmt.Errorf("line %d: the URL must be absolute http:// or https:// with a host and no fragment", n)
		}
		if first, dup := seen[u.String()]; dup {
			return nil, fmt.Errorf("line %d: the URL of line %d again", n, first)
		}
		seen[u.String()] = n
		sub := Subscriber{URL: u}
		for i, s := range fields[1:] {
			key, err := ParseSecret(s)
			if err != nil {
				return nil, fmt.Errorf("line %d, secret %d: %w", n, i+1, err)
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
			return nil, fmt.Errorf("line %d: more than %d subscribers", n, maxSubscribers)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the subscribers: %w", err)
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

// FileReloader keeps a subscriber set in step with its file, as the auth
// tokens file is kept (auth.FileReloader): it polls the content, so it
// follows a Kubernetes Secret's symlink swap; a file that no longer reads or
// parses leaves the set in force and is reported once.
type FileReloader struct {
	path        string
	interval    time.Duration
	subs        *Subscribers
	log         *zap.Logger
	observe     func(error)
	lastSum     [sha256.Size]byte
	failedSum   [sha256.Size]byte
	lastFailure string
}

// LoadFile reads the subscribers file once and returns its set and a
// reloader that keeps it current once run. observe (may be nil) is told of
// every reload attempt.
func LoadFile(path string, interval time.Duration, changed func([]Subscriber), log *zap.Logger, observe func(error)) (*Subscribers, *FileReloader, error) {
	if observe == nil {
		observe = func(error) {}
	}
	if interval <= 0 {
		return nil, nil, fmt.Errorf("the webhook subscribers reload interval must be positive, got %v", interval)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the webhook subscribers file: %w", err)
	}
	list, err := ParseSubscribers(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("webhook subscribers file %s: %w", path, err)
	}
	subs := NewSubscribers(list, changed)
	return subs, &FileReloader{path: path, interval: interval, subs: subs, log: log, observe: observe, lastSum: sha256.Sum256(data)}, nil
}

// Run rereads the file every interval until ctx ends.
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
		if msg := err.Error(); msg != r.lastFailure {
			r.lastFailure = msg
			r.log.Error("webhook subscribers file unreadable; keeping the subscribers in force", zap.String("path", r.path), zap.Error(err))
			r.observe(err)
		}
		return
	}
	sum := sha256.Sum256(data)
	switch sum {
	case r.lastSum:
		r.failedSum, r.lastFailure = [sha256.Size]byte{}, ""
		return
	case r.failedSum:
		return
	}
	list, err := ParseSubscribers(bytes.NewReader(data))
	if err != nil {
		r.failedSum, r.lastFailure = sum, err.Error()
		r.log.Error("webhook subscribers file refused as a whole; keeping the last good subscribers in force", zap.String("path", r.path), zap.Error(err))
		r.observe(err)
		return
	}
	r.lastSum, r.failedSum, r.lastFailure = sum, [sha256.Size]byte{}, ""
	r.subs.Replace(list)
	r.log.Info("webhook subscribers reloaded", zap.String("path", r.path), zap.Strings("subscribers", names(list)))
	r.observe(nil)
}

func names(subs []Subscriber) []string {
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.Name
	}
	return out
}
