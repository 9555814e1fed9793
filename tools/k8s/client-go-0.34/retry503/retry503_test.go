package retry503

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// backend answers each attempt from answers in turn (the last one
// repeated), recording the bodies it was sent.
type backend struct {
	answers []answer
	calls   atomic.Int32
	bodies  []string
}

type answer struct {
	code       int
	retryAfter string
	body       string
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(b.calls.Add(1)) - 1
	got, _ := io.ReadAll(r.Body)
	b.bodies = append(b.bodies, string(got))
	a := b.answers[min(n, len(b.answers)-1)]
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.code)
	_, _ = io.WriteString(w, a.body)
}

func newRetry(t *testing.T, next http.Handler, c *Config, waits *[]time.Duration) http.Handler {
	t.Helper()
	h, err := New(context.Background(), next, c, "retry503")
	if err != nil {
		t.Fatal(err)
	}
	h.(*Retry).sleep = func(ctx context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return ctx.Err()
	}
	return h
}

func TestRetry(t *testing.T) {
	unavailable := answer{http.StatusServiceUnavailable, "1", `{"code":50301}`}
	ok := answer{http.StatusOK, "", `{"name":"fern"}`}
	tests := []struct {
		name      string
		config    func(*Config)
		answers   []answer
		wantCode  int
		wantBody  string
		wantCalls int32
		wantWaits []time.Duration
	}{
		{"200 at once", nil, []answer{ok}, 200, ok.body, 1, nil},
		{"503 then 200: the caller sees the 200", nil, []answer{unavailable, unavailable, ok}, 200, ok.body, 3, []time.Duration{time.Second, time.Second}},
		{"503 on every attempt: the last one, its body", nil, []answer{unavailable}, 503, unavailable.body, 4, []time.Duration{time.Second, time.Second, time.Second}},
		{"503 without Retry-After: not retried", nil, []answer{{503, "", "down"}, ok}, 503, "down", 1, nil},
		{"Retry-After as a date: not retried", nil, []answer{{503, "Fri, 31 Dec 1999 23:59:59 GMT", "down"}, ok}, 503, "down", 1, nil},
		{"Retry-After beyond maxWait: not retried", nil, []answer{{503, "3", "down"}, ok}, 503, "down", 1, nil},
		{"Retry-After 0: again at once", nil, []answer{{503, "0", "down"}, ok}, 200, ok.body, 2, []time.Duration{0}},
		{"500: not retried", nil, []answer{{500, "1", "broken"}, ok}, 500, "broken", 1, nil},
		{"429 with Retry-After: not retried (the caller's budget)", nil, []answer{{429, "1", "limited"}, ok}, 429, "limited", 1, nil},
		{"one attempt: passed through", func(c *Config) { c.Attempts = 1 }, []answer{unavailable, ok}, 503, unavailable.body, 1, nil},
		{"maxWait raised", func(c *Config) { c.MaxWait = "5s" }, []answer{{503, "3", "down"}, ok}, 200, ok.body, 2, []time.Duration{3 * time.Second}},
		{"504 of retryOn: again after the interval", func(c *Config) { c.RetryOn = []int{502, 504} }, []answer{{504, "", "Gateway Timeout"}, {502, "", "Bad Gateway"}, ok}, 200, ok.body, 3, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}},
		{"504 of retryOn on every attempt: the last one", func(c *Config) { c.RetryOn = []int{504}; c.Attempts = 2 }, []answer{{504, "", "Gateway Timeout"}}, 504, "Gateway Timeout", 2, []time.Duration{100 * time.Millisecond}},
		{"502 not in retryOn: not retried", func(c *Config) { c.RetryOn = []int{504} }, []answer{{502, "", "Bad Gateway"}, ok}, 502, "Bad Gateway", 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := CreateConfig()
			if tt.config != nil {
				tt.config(c)
			}
			b := &backend{answers: tt.answers}
			var waits []time.Duration
			h := newRetry(t, b, c, &waits)
			req := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(`{"id":1,"name":"fern"}`))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode || rec.Body.String() != tt.wantBody {
				t.Errorf("answer %d %q, want %d %q", rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
			if b.calls.Load() != tt.wantCalls {
				t.Errorf("%d attempts, want %d", b.calls.Load(), tt.wantCalls)
			}
			for i, body := range b.bodies {
				if body != `{"id":1,"name":"fern"}` {
					t.Errorf("attempt %d sent body %q", i+1, body)
				}
			}
			if len(waits) != len(tt.wantWaits) {
				t.Fatalf("waits %v, want %v", waits, tt.wantWaits)
			}
			for i := range waits {
				if waits[i] != tt.wantWaits[i] {
					t.Errorf("waits %v, want %v", waits, tt.wantWaits)
				}
			}
			if tt.wantCode == 503 && rec.Header().Get("Retry-After") == "" && tt.answers[0].retryAfter != "" {
				t.Errorf("the 503 passed on without its Retry-After: %v", rec.Header())
			}
		})
	}
}

// The header of a held 503 never leaks into the answer that follows it.
func TestRetryHeadersOfOneAttempt(t *testing.T) {
	n := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("X-First", "yes")
			w.WriteHeader(503)
			return
		}
		w.Header().Set("X-Second", "yes")
		_, _ = io.WriteString(w, "ok") // an implicit 200
	})
	var waits []time.Duration
	rec := httptest.NewRecorder()
	newRetry(t, next, CreateConfig(), &waits).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/plants/1", nil))
	if rec.Code != 200 || rec.Body.String() != "ok" || rec.Header().Get("X-First") != "" || rec.Header().Get("X-Second") != "yes" ||
		rec.Header().Get("Retry-After") != "" {
		t.Errorf("got %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
}

// A caller gone during the wait gets the 503 it was held from, and no
// further attempt is made.
func TestRetryCallerGone(t *testing.T) {
	b := &backend{answers: []answer{{503, "1", "down"}, {200, "", "ok"}}}
	h, err := New(context.Background(), b, CreateConfig(), "retry503")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.(*Retry).sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader("{}")).WithContext(ctx))
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || b.calls.Load() != 1 {
		t.Errorf("got %d %v after %d attempts", rec.Code, rec.Header(), b.calls.Load())
	}
}

// A request held LogHeldOver or longer is one line with its attempts, both
// when it is answered and when its caller goes away; a shorter one is not
// logged.
func TestRetryLogHeld(t *testing.T) {
	tests := []struct {
		name, logOver string
		gone          bool
		want          string // a regular expression the line matches; "" for none
	}{
		{"answered", "1ns", false, `outcome="answered" attempts=503/\d+\+1000,504/\d+\+100,200/\d+\n$`},
		{"caller gone", "1ns", true, `outcome="caller gone" attempts=503/\d+\+1000\n$`},
		{"held briefly", "1h", false, ""},
		{"no log asked", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &backend{answers: []answer{{503, "1", "down"}, {504, "", "no pod"}, {200, "", "ok"}}}
			c := CreateConfig()
			c.RetryOn, c.LogHeldOver = []int{504}, tt.logOver
			h, err := New(context.Background(), b, c, "retry503")
			if err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			h.(*Retry).log = &log
			h.(*Retry).sleep = func(context.Context, time.Duration) error {
				if tt.gone {
					return context.Canceled
				}
				return nil
			}
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader("{}")))
			if tt.want == "" {
				if log.Len() != 0 {
					t.Errorf("logged %q", log.String())
				}
				return
			}
			if !strings.HasPrefix(log.String(), "retry503 held: start=") || !regexp.MustCompile(tt.want).MatchString(log.String()) || strings.Count(log.String(), "\n") != 1 {
				t.Errorf("logged %q, want one line with %q", log.String(), tt.want)
			}
		})
	}
}

// The real wait: a Retry-After of 0 is not waited for, the caller's
// deadline ends a longer one.
func TestSleep(t *testing.T) {
	if err := sleep(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := sleep(context.Background(), 20*time.Millisecond); err != nil || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("a wait of 20ms ended after %v with %v", time.Since(start), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleep(ctx, time.Hour); err == nil {
		t.Fatal("a cancelled wait ended without error")
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait cancelled midway ended with %v", err)
	}
}

// A body beyond MaxBodyBytes is sent whole, once.
func TestRetryLargeBodyOnce(t *testing.T) {
	b := &backend{answers: []answer{{503, "1", "down"}, {200, "", "ok"}}}
	c := CreateConfig()
	c.MaxBodyBytes = 8
	var waits []time.Duration
	rec := httptest.NewRecorder()
	body := strings.Repeat("x", 20)
	newRetry(t, b, c, &waits).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(body)))
	if rec.Code != 503 || b.calls.Load() != 1 || b.bodies[0] != body {
		t.Errorf("got %d after %d attempts, body sent %q", rec.Code, b.calls.Load(), b.bodies)
	}
}

// Through a real server and client: the answer's headers and body intact,
// Content-Length of the held attempt not mixed into the one sent.
func TestRetryOverHTTP(t *testing.T) {
	b := &backend{answers: []answer{{503, "0", `{"code":50301,"message":"the plant store is unavailable"}`}, {200, "", `{"name":"fern"}`}}}
	h, err := New(context.Background(), b, CreateConfig(), "retry503")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/plants", "application/json", strings.NewReader(`{"id":2,"name":"fern"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(got) != `{"name":"fern"}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("got %d %q %v", resp.StatusCode, got, resp.Header)
	}
}

func TestNewRejects(t *testing.T) {
	for _, c := range []*Config{
		{Attempts: 0, MaxWait: "1s", Interval: "1s"},
		{Attempts: 2, MaxWait: "soon", Interval: "1s"},
		{Attempts: 2, MaxWait: "-1s", Interval: "1s"},
		{Attempts: 2, MaxWait: "1s", MaxBodyBytes: -1, Interval: "1s"},
		{Attempts: 2, MaxWait: "1s", Interval: "often"},
		{Attempts: 2, MaxWait: "1s", Interval: "1s", RetryOn: []int{503}},
		{Attempts: 2, MaxWait: "1s", Interval: "1s", RetryOn: []int{429}},
		{Attempts: 2, MaxWait: "1s", Interval: "1s", LogHeldOver: "later"},
		{Attempts: 2, MaxWait: "1s", Interval: "1s", LogHeldOver: "0s"},
	} {
		if _, err := New(context.Background(), http.NotFoundHandler(), c, "retry503"); err == nil {
			t.Errorf("%+v accepted", *c)
		}
	}
}
