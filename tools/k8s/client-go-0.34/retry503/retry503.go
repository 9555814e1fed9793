// Package retry503 is a Traefik middleware plugin (a local plugin, run by
// Traefik's Yaegi interpreter, so the standard library only) that sends a
// request again when the service answers 503 with Retry-After, after the
// wait the answer asks for.
//
// Traefik 3.6's own retry middleware resends only what could not reach a
// server; a Gateway API HTTPRoute's retry on status codes is not in the
// Standard channel Traefik implements. plantstore answers 503 with
// Retry-After while its store is away (a Redis failover: a few seconds), and
// a create and a delete are safe to repeat by contract, so a Gateway that
// holds the request across that window spares its callers the retry.
//
// Each attempt gets the request as it came (its body read once, kept in
// memory up to MaxBodyBytes; a larger one is sent once, never retried). A
// 503 is kept from the caller while attempts remain and the wait it asks for
// fits: the wait is its Retry-After in seconds, at most MaxWait; a 503
// without Retry-After goes to the caller as it is. So do other answers but
// for the codes of RetryOn, the Gateway's own for an attempt no pod answered
// (504 past its response-header timeout: a pod whose node died with the
// request sent; 502), sent again after Interval. The caller's going away
// ends the waiting. A request held LogHeldOver or longer is logged with its
// attempts (a line on stdout, beside Traefik's access log).
package retry503

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is the middleware's configuration (the Middleware's
// spec.plugin.<name> object).
type Config struct {
	// Attempts in all, the first included (at least 1).
	Attempts int `json:"attempts,omitempty"`
	// MaxWait bounds one wait (a Retry-After beyond it is cut to it), as a
	// Go duration.
	MaxWait string `json:"maxWait,omitempty"`
	// MaxBodyBytes: a request body beyond it is sent once, not retried.
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`
	// RetryOn: codes retried though they carry no Retry-After, after
	// Interval (a Go duration).
	RetryOn  []int  `json:"retryOn,omitempty"`
	Interval string `json:"interval,omitempty"`
	// LogHeldOver, a Go duration: a request held this long or longer is
	// logged with each attempt's code, time and wait (empty: never).
	LogHeldOver string `json:"logHeldOver,omitempty"`
}

// CreateConfig returns the defaults: 4 attempts, waits of at most 2 s,
// bodies up to 64 KiB, no other code retried (100 ms apart when some are).
func CreateConfig() *Config {
	return &Config{Attempts: 4, MaxWait: "2s", MaxBodyBytes: 64 << 10, Interval: "100ms"}
}

// Retry is the middleware.
type Retry struct {
	next     http.Handler
	attempts int
	maxWait  time.Duration
	maxBody  int64
	retryOn  map[int]bool
	interval time.Duration
	logOver  time.Duration // 0: no log
	log      io.Writer
	sleep    func(ctx context.Context, d time.Duration) error
}

// New builds the middleware (Traefik's plugin entry point).
func New(_ context.Context, next http.Handler, config *Config, name string) (http.Handler, error) {
	if config.Attempts < 1 {
		return nil, fmt.Errorf("%s: attempts must be at least 1, not %d", name, config.Attempts)
	}
	maxWait, err := time.ParseDuration(config.MaxWait)
	if err != nil || maxWait < 0 {
		return nil, fmt.Errorf("%s: maxWait %q is not a duration of 0 or more", name, config.MaxWait)
	}
	if config.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("%s: maxBodyBytes must not be negative", name)
	}
	interval, err := time.ParseDuration(config.Interval)
	if err != nil || interval < 0 {
		return nil, fmt.Errorf("%s: interval %q is not a duration of 0 or more", name, config.Interval)
	}
	var logOver time.Duration
	if config.LogHeldOver != "" {
		if logOver, err = time.ParseDuration(config.LogHeldOver); err != nil || logOver <= 0 {
			return nil, fmt.Errorf("%s: logHeldOver %q is not a duration above 0", name, config.LogHeldOver)
		}
	}
	retryOn := make(map[int]bool)
	for _, code := range config.RetryOn {
		if code < 500 || code > 599 || code == http.StatusServiceUnavailable {
			return nil, fmt.Errorf("%s: retryOn takes 5xx codes but 503 (retried by its Retry-After), not %d", name, code)
		}
		retryOn[code] = true
	}
	return &Retry{next: next, attempts: config.Attempts, maxWait: maxWait, maxBody: config.MaxBodyBytes,
		retryOn: retryOn, interval: interval, logOver: logOver, log: os.Stdout, sleep: sleep}, nil
}

// sleep waits d, or less when ctx ends first (then its error). A context's
// timer, not a select on a time.Timer's channel: interpreted by Yaegi, such
// a select now and then never sees its timer fire, and the wait lasts until
// the caller gives up.
func sleep(ctx context.Context, d time.Duration) error {
	wait, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	<-wait.Done()
	return ctx.Err()
}

func (m *Retry) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	if m.attempts == 1 {
		m.next.ServeHTTP(rw, req)
		return
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		read, err := io.ReadAll(io.LimitReader(req.Body, m.maxBody+1))
		if err != nil {
			http.Error(rw, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if int64(len(read)) > m.maxBody {
			// Too big to keep: once, the part read put back in front.
			req.Body = readCloser{io.MultiReader(bytes.NewReader(read), req.Body), req.Body}
			m.next.ServeHTTP(rw, req)
			return
		}
		body = read
	}
	start := time.Now()
	var tried []string // with logOver: each attempt as code/ms (+wait ms)
	for attempt := 1; ; attempt++ {
		if body != nil {
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		w := &attemptWriter{real: rw, header: make(http.Header), last: attempt == m.attempts, retry: m}
		t := time.Now()
		m.next.ServeHTTP(w, req)
		if !w.held {
			if !w.wrote {
				w.WriteHeader(http.StatusOK)
			}
			if m.logOver > 0 {
				m.logHeld(start, append(tried, fmt.Sprintf("%d/%d", w.code, time.Since(t).Milliseconds())), "answered")
			}
			return
		}
		if m.logOver > 0 {
			tried = append(tried, fmt.Sprintf("%d/%d+%d", w.code, time.Since(t).Milliseconds(), w.wait.Milliseconds()))
		}
		if m.sleep(req.Context(), w.wait) != nil {
			// The caller is gone or out of time: the answer it would have had.
			w.release()
			if m.logOver > 0 {
				m.logHeld(start, tried, "caller gone")
			}
			return
		}
	}
}

// logHeld writes one line for a request held logOver or longer: when it
// came, how long it was held, how it ended and its attempts, each as
// code/milliseconds, +the wait after it. Without logOver nothing is
// recorded: the answers that pass at once pay for no log.
func (m *Retry) logHeld(start time.Time, tried []string, outcome string) {
	held := time.Since(start)
	if held < m.logOver {
		return
	}
	fmt.Fprintf(m.log, "retry503 held: start=%s held_ms=%d outcome=%q attempts=%s\n",
		start.UTC().Format(time.RFC3339Nano), held.Milliseconds(), outcome, strings.Join(tried, ","))
}

// attemptWriter is one attempt's ResponseWriter: a 503 with a Retry-After
// that fits, or a code of RetryOn, is held back (its body dropped) unless it
// is the last attempt; any other answer goes through to the caller.
type attemptWriter struct {
	real   http.ResponseWriter
	header http.Header
	last   bool
	retry  *Retry
	wrote  bool
	held   bool
	code   int
	wait   time.Duration
}

func (w *attemptWriter) Header() http.Header { return w.header }

func (w *attemptWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	if code >= 100 && code < 200 {
		// An informational answer (103 Early Hints): passed on, more follows.
		copyHeader(w.real.Header(), w.header)
		w.real.WriteHeader(code)
		return
	}
	w.wrote, w.code = true, code
	if !w.last {
		if code == http.StatusServiceUnavailable {
			if wait, ok := retryAfter(w.header.Get("Retry-After")); ok && wait <= w.retry.maxWait {
				w.held, w.wait = true, wait
				return
			}
		} else if w.retry.retryOn[code] {
			w.held, w.wait = true, w.retry.interval
			return
		}
	}
	copyHeader(w.real.Header(), w.header)
	w.real.WriteHeader(code)
}

func (w *attemptWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.held {
		return len(b), nil
	}
	return w.real.Write(b)
}

// Flush passes a streamed answer on as it comes.
func (w *attemptWriter) Flush() {
	if w.held {
		return
	}
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.real.(http.Flusher); ok {
		f.Flush()
	}
}

// release sends the held 503 to the caller (without its body, dropped).
func (w *attemptWriter) release() {
	copyHeader(w.real.Header(), w.header)
	w.real.Header().Del("Content-Length")
	w.real.WriteHeader(w.code)
}

// retryAfter reads a Retry-After in seconds (the form plantstore sends; an
// HTTP date is not waited for).
func retryAfter(v string) (time.Duration, bool) {
	s, err := strconv.Atoi(v)
	if err != nil || s < 0 {
		return 0, false
	}
	return time.Duration(s) * time.Second, true
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}
