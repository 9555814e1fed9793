package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// errPermanent is a transport failure that a retry would meet again.
var errPermanent = errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority")

// op is one PlantStore call, its outcome reduced to an error.
type op struct {
	name string
	call func(ctx context.Context, c *PlantStore) error
}

var (
	getOp = op{"GET /plants/{id}", func(ctx context.Context, c *PlantStore) error {
		_, err := c.GetPlant(ctx, 10)
		return err
	}}
	deleteOp = op{"DELETE /plants/{id}", func(ctx context.Context, c *PlantStore) error {
		return c.DeletePlant(ctx, 10)
	}}
	createOp = op{"POST /plants", func(ctx context.Context, c *PlantStore) error {
		_, err := c.CreatePlant(ctx, NewPlant{Id: 10, Name: "Monstera", Tag: ptr("tropical")})
		return err
	}}
	listOp = op{"GET /plants", func(ctx context.Context, c *PlantStore) error {
		_, err := c.ListPlants(ctx, 5)
		return err
	}}
)

func TestEveryOperationSendsTheBearerToken(t *testing.T) {
	srv := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodPost:
			reply(200, `{"name":"Monstera","tag":"tropical"}`)(w, r)
		case r.URL.Path == "/plants":
			reply(200, `[]`)(w, r)
		default:
			reply(200, `{"id":10,"name":"Monstera"}`)(w, r)
		}
	})
	c, _ := newTestClient(t, srv.URL)
	for _, o := range []op{getOp, deleteOp, createOp, listOp} {
		if err := o.call(t.Context(), c); err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
	}
	got := srv.requests()
	if len(got) != 4 {
		t.Fatalf("%d requests, want 4", len(got))
	}
	for _, r := range got {
		if r.auth != "Bearer test-token" {
			t.Errorf("%s %s: Authorization %q, want the bearer token", r.method, r.path, r.auth)
		}
	}
}

func TestTheTokenGoesOnlyToTheBaseURL(t *testing.T) {
	other := newScripted(t, reply(200, `[]`))
	srv := newScripted(t, reply(200, `[{"id":1,"name":"a"}]`, "Link", "<"+other.URL+`/plants?cursor=x>; rel="next"`))
	c, _ := newTestClient(t, srv.URL)
	for p, err := range c.All(t.Context(), 0) {
		if err == nil {
			if p.Id != 1 {
				t.Fatalf("plant %+v", p)
			}
			continue
		}
		if !strings.Contains(err.Error(), "not following it with the token") {
			t.Fatalf("error %v, want the refusal to follow a link to another host", err)
		}
	}
	if n := len(other.requests()); n != 0 {
		t.Fatalf("the other host got %d requests", n)
	}
	// The raw doer refuses as well.
	req, _ := http.NewRequest(http.MethodGet, other.URL+"/plants", nil)
	if _, err := c.Doer().Do(req); err == nil || len(other.requests()) != 0 {
		t.Fatalf("Doer sent a request to another host: %v", err)
	}
}

func TestRetries(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case http.MethodPost:
			reply(200, `{"name":"Monstera","tag":"tropical"}`)(w, r)
		default:
			if r.URL.Path == "/plants" {
				reply(200, `[]`)(w, r)
			} else {
				reply(200, `{"id":10,"name":"Monstera"}`)(w, r)
			}
		}
	}
	notFound := reply(404, `{"error":40402,"message":"no plant has id 10"}`)
	cases := []struct {
		name     string
		op       op
		opts     []Option
		script   []http.HandlerFunc
		failures []error // transport errors before the server sees a request
		attempts int     // requests the server receives
		waits    []time.Duration
		code     int32 // of the *APIError returned; 0: success
		err      error // errors.Is target, instead of code
	}{
		{name: "GET: 503 with Retry-After, then 200", op: getOp,
			script: []http.HandlerFunc{unavailable("1"), ok}, attempts: 2, waits: []time.Duration{time.Second}},
		{name: "DELETE: 503 with Retry-After 2, then 204", op: deleteOp,
			script: []http.HandlerFunc{unavailable("2"), ok}, attempts: 2, waits: []time.Duration{2 * time.Second}},
		{name: "POST /plants: 503 twice, then 200", op: createOp,
			script: []http.HandlerFunc{unavailable("1"), unavailable("1"), ok}, attempts: 3, waits: []time.Duration{time.Second, time.Second}},
		{name: "list: 503 with Retry-After as an HTTP-date", op: listOp,
			script: []http.HandlerFunc{unavailable("Fri, 02 Jan 2026 03:04:08 GMT"), ok}, attempts: 2, waits: []time.Duration{3 * time.Second}},
		{name: "503 without Retry-After: exponential backoff", op: getOp,
			script: []http.HandlerFunc{unavailable(""), unavailable(""), unavailable(""), ok}, attempts: 4,
			waits: []time.Duration{75 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond}},
		{name: "503 with Retry-After, then without: the backoff is the second attempt's", op: getOp,
			script: []http.HandlerFunc{unavailable("1"), unavailable(""), ok}, attempts: 3,
			waits: []time.Duration{time.Second, 150 * time.Millisecond}},
		{name: "503 every time: attempts bounded, the last 503 returned", op: getOp,
			script: []http.HandlerFunc{unavailable("1")}, attempts: 4, waits: []time.Duration{time.Second, time.Second, time.Second}, code: 50301},
		{name: "WithRetries(2) bounds the attempts", op: deleteOp, opts: []Option{WithRetries(2)},
			script: []http.HandlerFunc{unavailable("1")}, attempts: 2, waits: []time.Duration{time.Second}, code: 50301},
		{name: "WithRetries(1): no retry", op: createOp, opts: []Option{WithRetries(1)},
			script: []http.HandlerFunc{unavailable("1")}, attempts: 1, code: 50301},
		{name: "Retry-After beyond the maximum: returned at once", op: getOp,
			script: []http.HandlerFunc{unavailable("3600")}, attempts: 1, code: 50301},
		{name: "WithMaxRetryAfter raises the maximum", op: getOp, opts: []Option{WithMaxRetryAfter(time.Hour)},
			script: []http.HandlerFunc{unavailable("3600"), ok}, attempts: 2, waits: []time.Duration{time.Hour}},
		{name: "connection refused, then 200", op: getOp, failures: []error{refusedErr(t)},
			script: []http.HandlerFunc{ok}, attempts: 1, waits: []time.Duration{75 * time.Millisecond}},
		{name: "HTTP/2 connection found dead by its health check, then 200", op: createOp,
			failures: []error{errors.New("http2: client connection lost")},
			script:   []http.HandlerFunc{ok}, attempts: 1, waits: []time.Duration{75 * time.Millisecond}},
		{name: "reply cut off, then 200", op: createOp,
			script: []http.HandlerFunc{cutOff, ok}, attempts: 2, waits: []time.Duration{75 * time.Millisecond}},
		{name: "reply cut off every time: attempts bounded", op: listOp,
			script: []http.HandlerFunc{cutOff}, attempts: 4, err: io.EOF,
			waits: []time.Duration{75 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond}},
		{name: "WithBackoff sets the waits", op: getOp, opts: []Option{WithBackoff(time.Second, 3*time.Second)},
			script: []http.HandlerFunc{unavailable(""), unavailable(""), unavailable(""), ok}, attempts: 4,
			waits: []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 2250 * time.Millisecond}},
		{name: "an error that will not pass is not retried", op: getOp, failures: []error{errPermanent},
			script: []http.HandlerFunc{ok}, attempts: 0, err: errPermanent},
		{name: "429 with Retry-After, then 200", op: listOp,
			script: []http.HandlerFunc{rateLimited("2"), ok}, attempts: 2, waits: []time.Duration{2 * time.Second}},
		{name: "429 without Retry-After is not retried", op: getOp,
			script: []http.HandlerFunc{rateLimited(""), ok}, attempts: 1, code: 42901},
		{name: "429 beyond the maximum wait: returned at once", op: createOp,
			script: []http.HandlerFunc{rateLimited("60"), ok}, attempts: 1, code: 42901},
		{name: "403 is not retried", op: deleteOp,
			script: []http.HandlerFunc{reply(403, `{"error":40301,"message":"scope"}`), ok}, attempts: 1, code: 40301},
		{name: "404 is not retried", op: getOp, script: []http.HandlerFunc{notFound, ok}, attempts: 1, code: 40402},
		{name: "409 is not retried", op: createOp,
			script: []http.HandlerFunc{reply(409, `{"error":40901,"message":"id: 10 is already taken by a different plant"}`), ok}, attempts: 1, code: 40901},
		{name: "400 is not retried", op: listOp,
			script: []http.HandlerFunc{reply(400, `{"error":40008,"message":"limit"}`), ok}, attempts: 1, code: 40008},
		{name: "401 is not retried", op: deleteOp,
			script: []http.HandlerFunc{reply(401, `{"error":40102,"message":"Authorization: token not accepted"}`), ok}, attempts: 1, code: 40102},
		{name: "500 is not retried", op: getOp,
			script: []http.HandlerFunc{reply(500, `{"error":50001,"message":"internal error"}`), ok}, attempts: 1, code: 50001},
		// A DELETE retried after an attempt whose outcome is unknown may find
		// the plant already gone: that 404 is the delete having happened.
		{name: "DELETE: 503, then 404: done", op: deleteOp, script: []http.HandlerFunc{unavailable("1"), notFound},
			attempts: 2, waits: []time.Duration{time.Second}},
		{name: "DELETE: reply cut off, then 404: done", op: deleteOp, script: []http.HandlerFunc{cutOff, notFound},
			attempts: 2, waits: []time.Duration{75 * time.Millisecond}},
		{name: "DELETE: connection refused, then 404: not found", op: deleteOp, failures: []error{refusedErr(t)},
			script: []http.HandlerFunc{notFound}, attempts: 1, waits: []time.Duration{75 * time.Millisecond}, code: 40402},
		// A 429 is answered before the request is served: the DELETE did not happen.
		{name: "DELETE: 429, then 404: not found", op: deleteOp, script: []http.HandlerFunc{rateLimited("1"), notFound},
			attempts: 2, waits: []time.Duration{time.Second}, code: 40402},
		{name: "DELETE: 404 on the first attempt: not found", op: deleteOp, script: []http.HandlerFunc{notFound}, attempts: 1, code: 40402},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newScripted(t, tc.script...)
			opts := tc.opts
			if tc.failures != nil {
				opts = append(opts, WithHTTPDoer(&failingDoer{errs: tc.failures, next: http.DefaultClient}))
			}
			c, clk := newTestClient(t, srv.URL, opts...)
			err := tc.op.call(t.Context(), c)
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Errorf("error %v, want %v", err, tc.err)
				}
			case tc.code == 0 && err != nil:
				t.Errorf("error %v, want success", err)
			case tc.code != 0:
				var e *APIError
				if !errors.As(err, &e) || e.Code != tc.code {
					t.Errorf("error %v, want an *APIError with code %d", err, tc.code)
				}
			}
			got := srv.requests()
			if len(got) != tc.attempts {
				t.Errorf("%d requests reached the server, want %d", len(got), tc.attempts)
			}
			for i, r := range got {
				if r != got[0] {
					t.Errorf("attempt %d differs from the first: %+v, want %+v", i+1, r, got[0])
				}
			}
			if w := clk.Waits(); !slices.Equal(w, tc.waits) {
				t.Errorf("waits %v, want %v", w, tc.waits)
			}
		})
	}
}

// TestOnlySafeRequestsAreRetried sends raw requests through Doer: what the
// contract does not make idempotent gets one attempt, even on a 503.
func TestOnlySafeRequestsAreRetried(t *testing.T) {
	cases := []struct {
		method, path string
		body         io.Reader
		attempts     int
	}{
		{http.MethodGet, "/plants/1", nil, 4},
		{http.MethodHead, "/plants", nil, 4},
		{http.MethodDelete, "/plants/1", nil, 4},
		{http.MethodPost, "/plants", strings.NewReader(`{"id":1,"name":"a"}`), 4},
		{http.MethodPost, "/prefix/../plants", strings.NewReader(`{"id":1,"name":"a"}`), 4},
		{http.MethodPost, "/plants/1", strings.NewReader(`{}`), 1},
		{http.MethodPost, "/other", strings.NewReader(`{}`), 1},
		{http.MethodPut, "/plants/1", strings.NewReader(`{}`), 1},
		{http.MethodPatch, "/plants/1", strings.NewReader(`{}`), 1},
		// A body that cannot be replayed (no GetBody) is sent once.
		{http.MethodPost, "/plants", io.NopCloser(strings.NewReader(`{"id":1,"name":"a"}`)), 1},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			srv := newScripted(t, unavailable("1"))
			c, _ := newTestClient(t, srv.URL)
			req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Doer().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			drain(resp.Body)
			if resp.StatusCode != 503 {
				t.Fatalf("status %d, want the last 503", resp.StatusCode)
			}
			if n := len(srv.requests()); n != tc.attempts {
				t.Fatalf("%d attempts, want %d", n, tc.attempts)
			}
			if req.Header.Get("Authorization") != "" {
				t.Fatal("the caller's request was changed: it carries the token")
			}
		})
	}
}

func TestRetriesStopWhenTheContextEnds(t *testing.T) {
	t.Run("cancelled while a request is in flight", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		srv := newScripted(t, unavailable("1"), func(w http.ResponseWriter, r *http.Request) {
			cancel()
			unavailable("1")(w, r)
		})
		c, _ := newTestClient(t, srv.URL)
		if err := getOp.call(ctx, c); !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
		if n := len(srv.requests()); n != 2 {
			t.Fatalf("%d attempts, want 2: none after the cancellation", n)
		}
	})
	t.Run("cancelled during the wait", func(t *testing.T) {
		srv := newScripted(t, unavailable(""))
		ctx, cancel := context.WithCancel(t.Context())
		c, _ := newTestClient(t, srv.URL)
		// The real sleep, with the context cancelled while it waits.
		c.retry.sleep = func(ctx context.Context, d time.Duration) error {
			cancel()
			return sleepContext(ctx, time.Hour)
		}
		if err := deleteOp.call(ctx, c); !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
		if n := len(srv.requests()); n != 1 {
			t.Fatalf("%d attempts, want 1", n)
		}
	})
	t.Run("a wait past the deadline is not started", func(t *testing.T) {
		srv := newScripted(t, unavailable("5"))
		c, clk := newTestClient(t, srv.URL)
		c.retry.now = time.Now // the deadline is on the real clock
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		if err := createOp.call(ctx, c); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want context.DeadlineExceeded", err)
		}
		if n, w := len(srv.requests()), clk.Waits(); n != 1 || len(w) != 0 {
			t.Fatalf("%d attempts and waits %v, want 1 attempt and no wait", n, w)
		}
	})
}

func TestSleepContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("stopped")
	done := make(chan error)
	go func() { done <- sleepContext(ctx, time.Hour) }()
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("sleepContext = %v, want the context's cause", err)
	}
	if err := sleepContext(t.Context(), time.Nanosecond); err != nil {
		t.Fatalf("a finished wait = %v", err)
	}
}

// TestBackoff: the nth wait without a Retry-After is min(ceiling,
// base·2^(n-1)) jittered down by up to half, and the jitter spans that range.
func TestBackoff(t *testing.T) {
	p := retryPolicy{base: 100 * time.Millisecond, ceiling: time.Second, spread: equalJitter}
	caps := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second, time.Second}
	lowest, highest := slices.Clone(caps), make([]time.Duration, len(caps))
	for range 1000 {
		schedule := p.schedule()
		for n, d := range caps {
			got := schedule.NextBackOff()
			if got < d/2 || got > d {
				t.Fatalf("wait %d = %v, want within [%v, %v]", n+1, got, d/2, d)
			}
			lowest[n], highest[n] = min(lowest[n], got), max(highest[n], got)
		}
	}
	for n, d := range caps {
		if lowest[n] > d/2+d/20 || highest[n] < d-d/20 {
			t.Errorf("wait %d ranged over [%v, %v] in 1000 draws, want about [%v, %v]", n+1, lowest[n], highest[n], d/2, d)
		}
	}
}

// plantsServer serves GET /plants (under prefix) over ids 1..n in pages,
// with relative next links carrying a cursor, as the service does.
// failAt, when not 0, is a page number answered with 40009 instead.
func plantsServer(t *testing.T, prefix string, n, failAt int) *scripted {
	t.Helper()
	page := 0
	return newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		page++
		if r.URL.Path != prefix+"/plants" {
			reply(404, `{"error":40401,"message":"path not found"}`)(w, r)
			return
		}
		if page == failAt {
			reply(400, `{"error":40009,"message":"cursor is not one this service issued"}`)(w, r)
			return
		}
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		after, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		var items []string
		for id := after + 1; id <= n && len(items) < limit; id++ {
			items = append(items, fmt.Sprintf(`{"id":%d,"name":"plant %d"}`, id, id))
		}
		if last := after + len(items); last < n {
			w.Header().Set("Link", fmt.Sprintf(`<%s/plants?cursor=%d&limit=%d>; rel="next"`, prefix, last, limit))
		}
		reply(200, "["+strings.Join(items, ",")+"]")(w, r)
	})
}

func TestAllWalksEveryPage(t *testing.T) {
	cases := []struct {
		name     string
		prefix   string
		n, limit int
		stopAt   int // break out after this many plants; 0: walk to the end
		want     int // plants yielded
		requests int
	}{
		{name: "three pages", n: 7, limit: 3, want: 7, requests: 3},
		{name: "exact pages", n: 6, limit: 3, want: 6, requests: 2},
		{name: "empty store", n: 0, limit: 3, want: 0, requests: 1},
		{name: "under a path prefix", prefix: "/store", n: 5, limit: 2, want: 5, requests: 3},
		{name: "break stops the walk", n: 10, limit: 3, stopAt: 4, want: 4, requests: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := plantsServer(t, tc.prefix, tc.n, 0)
			c, _ := newTestClient(t, srv.URL+tc.prefix)
			var ids []int64
			for p, err := range c.All(t.Context(), tc.limit) {
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, p.Id)
				if p.Name != fmt.Sprintf("plant %d", p.Id) {
					t.Fatalf("plant %+v", p)
				}
				if len(ids) == tc.stopAt {
					break
				}
			}
			if len(ids) != tc.want {
				t.Fatalf("%d plants, want %d: %v", len(ids), tc.want, ids)
			}
			for i, id := range ids {
				if id != int64(i+1) {
					t.Fatalf("ids %v, want 1..%d in order", ids, tc.want)
				}
			}
			reqs := srv.requests()
			if len(reqs) != tc.requests {
				t.Fatalf("%d requests, want %d", len(reqs), tc.requests)
			}
			if want := "limit=" + strconv.Itoa(tc.limit); reqs[0].query != want {
				t.Fatalf("first page query %q, want %q", reqs[0].query, want)
			}
		})
	}
}

func TestAllStopsOnAnError(t *testing.T) {
	srv := plantsServer(t, "", 10, 2)
	c, _ := newTestClient(t, srv.URL)
	var ids []int64
	var errs []error
	for p, err := range c.All(t.Context(), 3) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids = append(ids, p.Id)
	}
	if len(ids) != 3 || len(errs) != 1 {
		t.Fatalf("%d plants and errors %v, want the first page's 3 and one error", len(ids), errs)
	}
	var e *APIError
	if !errors.As(errs[0], &e) || e.Code != CodeCursorNotRecognised || e.Status != 400 {
		t.Fatalf("error %v, want the 40009 *APIError", errs[0])
	}
	if n := len(srv.requests()); n != 2 {
		t.Fatalf("%d requests, want 2: none after the error", n)
	}

	// A Link header that does not parse is an error too, not a silent end.
	bad := newScripted(t, reply(200, `[{"id":1,"name":"a"}]`, "Link", `</plants?cursor=1; rel="next"`))
	c, _ = newTestClient(t, bad.URL)
	var last error
	for _, err := range c.All(t.Context(), 1) {
		last = err
	}
	if last == nil || !strings.Contains(last.Error(), "Link header") {
		t.Fatalf("error %v, want one about the Link header", last)
	}
}

func TestPagesOneByOne(t *testing.T) {
	srv := plantsServer(t, "", 3, 0)
	c, _ := newTestClient(t, srv.URL)
	p, err := c.ListPlants(t.Context(), 2)
	if err != nil || len(p.Plants) != 2 || p.Next == nil {
		t.Fatalf("first page %+v, %v", p, err)
	}
	if want := srv.URL + "/plants?cursor=2&limit=2"; p.Next.String() != want {
		t.Fatalf("next %s, want %s (the relative link resolved)", p.Next, want)
	}
	if p, err = c.NextPage(t.Context(), p); err != nil || len(p.Plants) != 1 || p.Next != nil {
		t.Fatalf("last page %+v, %v", p, err)
	}
	if _, err := c.NextPage(t.Context(), p); !errors.Is(err, ErrLastPage) {
		t.Fatalf("NextPage after the last = %v, want ErrLastPage", err)
	}
}

func TestAPIErrorDecoding(t *testing.T) {
	cases := []struct {
		name   string
		answer http.HandlerFunc
		want   APIError
		text   string // in Error()
	}{
		{name: "Error body", answer: reply(404, `{"error":40402,"message":"no plant has id 10"}`),
			want: APIError{Status: 404, Code: 40402, Message: "no plant has id 10"}, text: "plantstore answered 404 (error 40402): no plant has id 10"},
		{name: "503 with Retry-After", answer: reply(503, `{"error":50301,"message":"store unavailable; retry later"}`, "Retry-After", "3600"),
			want: APIError{Status: 503, Code: 50301, Message: "store unavailable; retry later", RetryAfter: time.Hour}, text: "retry after 1h0m0s"},
		{name: "not an Error body", answer: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "  <html>bad gateway</html>\n")
		}, want: APIError{Status: 502, Message: "<html>bad gateway</html>"}, text: "plantstore answered 502: <html>bad gateway</html>"},
		{name: "no body", answer: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(418) },
			want: APIError{Status: 418, Message: "I'm a teapot"}},
		{name: "JSON without the fields", answer: reply(400, `{"detail":"x"}`),
			want: APIError{Status: 400, Message: `{"detail":"x"}`}},
		{name: "a 200 that is not a plant", answer: reply(200, `{"unexpected":true}`, "Content-Type", "text/plain"),
			want: APIError{Status: 200, Message: `{"unexpected":true}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newScripted(t, tc.answer)
			c, _ := newTestClient(t, srv.URL, WithRetries(1))
			_, err := c.GetPlant(t.Context(), 10)
			var e *APIError
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want an *APIError", err, err)
			}
			if *e != tc.want {
				t.Fatalf("APIError %+v, want %+v", *e, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), "get plant 10") {
				t.Fatalf("error text %q, want it to name the operation and contain %q", err, tc.text)
			}
			if strings.Contains(err.Error(), "test-token") {
				t.Fatal("the token is in the error text")
			}
		})
	}
}

func TestNewRejectsBadArguments(t *testing.T) {
	for _, tc := range []struct{ base, token string }{
		{"", "t"}, {"127.0.0.1:8080", "t"}, {"ftp://host", "t"}, {"http://", "t"}, {"http://host", ""}, {"http://host/%zz", "t"},
	} {
		if _, err := New(tc.base, tc.token); err == nil {
			t.Errorf("New(%q, %q) accepted", tc.base, tc.token)
		}
	}
}
