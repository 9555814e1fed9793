package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"github.com/plantstore/plantstore/internal/tlsca"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeStore answers creates as plantstore does: 200 with the stored plant
// (its name; no id) for a new id or the same body again, 409 for another
// body; unavailable answers 503 (with
// Retry-After unless noRetryAfter); forget drops every stored plant whose
// id passes it, after its 200, to play a store that lost acknowledged data.
type fakeStore struct {
	mu           sync.Mutex
	plants       map[int64]string
	unavailable  bool
	noRetryAfter bool
	forget       func(id int64) bool
}

func (f *fakeStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer tok" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unavailable {
		if !f.noRetryAfter {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if name, ok := f.plants[p.ID]; ok && name != p.Name {
		w.WriteHeader(http.StatusConflict)
		return
	}
	if f.forget == nil || !f.forget(p.ID) {
		f.plants[p.ID] = p.Name
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"name": p.Name})
}

func runAgainst(t *testing.T, h http.Handler) Summary {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return run(context.Background(), options{
		url: srv.URL, token: "tok", rate: 400, duration: 500 * time.Millisecond,
		timeout: 2 * time.Second, verifyFor: 5 * time.Second, maxInFlight: 100,
	})
}

// Through TLS, as through a Gateway's HTTPS listener: the server's CA from
// -ca-file is trusted, and without it nothing is acknowledged.
func TestRunOverTLS(t *testing.T) {
	srv := httptest.NewTLSServer(&fakeStore{plants: map[int64]string{}})
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	roots, err := tlsca.Pool(ca)
	if err != nil {
		t.Fatal(err)
	}
	o := options{url: srv.URL, token: "tok", rate: 200, duration: 300 * time.Millisecond,
		timeout: 2 * time.Second, verifyFor: 5 * time.Second, maxInFlight: 100, roots: roots}
	if s := run(context.Background(), o); s.Sent == 0 || s.Codes[200] != s.Sent || s.Verified != s.Acknowledged {
		t.Fatalf("with the CA: sent %d, codes %v, verified %d of %d", s.Sent, s.Codes, s.Verified, s.Acknowledged)
	}
	o.roots = nil
	if s := run(context.Background(), o); s.Acknowledged != 0 || s.TransportErrors != s.Sent {
		t.Fatalf("without the CA: acknowledged %d, transport errors %d of %d", s.Acknowledged, s.TransportErrors, s.Sent)
	}
}

func TestRunCountsAndVerifies(t *testing.T) {
	s := runAgainst(t, &fakeStore{plants: map[int64]string{}})
	// 200 due at 400/s in 0.5 s; fewer on a busy machine, whose pacer falls behind.
	if s.Sent < 20 || s.Codes[200] != s.Sent || s.TransportErrors != 0 {
		t.Fatalf("sent %d, codes %v, transport errors %d", s.Sent, s.Codes, s.TransportErrors)
	}
	if s.Acknowledged != s.Sent || s.Verified != s.Acknowledged || len(s.Lost) != 0 || s.Unverifiable != 0 {
		t.Errorf("acknowledged %d, verified %d, lost %v, unverifiable %d", s.Acknowledged, s.Verified, s.Lost, s.Unverifiable)
	}
	if s.Start == 0 || s.End < s.Start || s.LatencyMaxMs <= 0 || s.LatencyP99Ms > s.LatencyMaxMs || s.LatencyP50Ms > s.LatencyP99Ms {
		t.Errorf("times: %+v", s)
	}
	if s.Stalls != 0 {
		t.Errorf("%d stalls against a store that answers at once", s.Stalls)
	}
}

// TestRunCountsStalls: against a store slower than -max-in-flight allows at
// the rate, the slots that fall due while every worker is busy are stalls.
func TestRunCountsStalls(t *testing.T) {
	store := &fakeStore{plants: map[int64]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		store.ServeHTTP(w, r)
	}))
	defer srv.Close()
	// 5 requests of 100ms at a time serve 50 a second of the 400 asked.
	s := run(context.Background(), options{url: srv.URL, token: "tok", rate: 400, duration: 500 * time.Millisecond,
		timeout: 2 * time.Second, verifyFor: 5 * time.Second, maxInFlight: 5})
	if s.Stalls < 100 || s.TransportErrors != 0 || s.Verified != s.Acknowledged {
		t.Fatalf("sent %d, stalls %d (want most of the 200 slots), transport errors %d %v, verified %d of %d",
			s.Sent, s.Stalls, s.TransportErrors, s.ErrorSamples, s.Verified, s.Acknowledged)
	}
	// The slowest answers, slowest first: each waited its 100 ms and more
	// for a worker.
	after := func(sample string) int {
		var ms int
		if _, err := fmt.Sscanf(strings.Fields(sample)[2], "after=%dms", &ms); err != nil {
			t.Fatalf("slowest answer %q: %v", sample, err)
		}
		return ms
	}
	if len(s.Slowest) != slowestKept || after(s.Slowest[0]) < after(s.Slowest[slowestKept-1]) || after(s.Slowest[slowestKept-1]) < 100 {
		t.Errorf("slowest answers %q: want %d, slowest first, each over 100ms", s.Slowest, slowestKept)
	}
}

func TestStalls(t *testing.T) {
	began := time.Unix(1000, 0)
	at := func(ms int) time.Time { return began.Add(time.Duration(ms) * time.Millisecond) }
	w := func(from, to int) window { return window{at(from), at(to)} }
	for _, tc := range []struct {
		name       string
		busy       []window
		slots, max int
		want       int
	}{
		{"never full", []window{w(0, 50), w(60, 90)}, 100, 2, 0},
		{"full from 5 to 35: slots 10, 20, 30", []window{w(0, 50), w(5, 35)}, 100, 2, 3},
		{"a slot when a worker frees is served", []window{w(0, 40), w(5, 30)}, 100, 2, 2},
		{"twice full", []window{w(0, 100), w(5, 15), w(41, 62)}, 100, 2, 1 + 2},
		{"full past the schedule's end", []window{w(0, 500), w(1, 500)}, 20, 2, 20},
	} {
		if got := stalls(tc.busy, began, 10*time.Millisecond, tc.slots, tc.max); got != tc.want {
			t.Errorf("%s: %d stalls, want %d", tc.name, got, tc.want)
		}
	}
}

// TestRunCannotVerifyAnAnswerNamingNoPlant: a 200 whose body does not name
// a plant of the run is acknowledged but unverifiable, not silently dropped.
func TestRunCannotVerifyAnAnswerNamingNoPlant(t *testing.T) {
	store := &fakeStore{plants: map[int64]string{}}
	var n atomic.Int32
	s := runAgainst(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 3:
			_, _ = io.WriteString(w, `{"name": "someone else's"}`)
		case 5:
			_, _ = io.WriteString(w, `{"name": "load-1"}`) // an id outside this run's
		default:
			store.ServeHTTP(w, r)
		}
	}))
	if s.Acknowledged != s.Sent || s.Unverifiable != 2 || s.Verified != s.Acknowledged-2 || len(s.Lost) != 0 {
		t.Fatalf("sent %d, acknowledged %d, verified %d, unverifiable %d, lost %v", s.Sent, s.Acknowledged, s.Verified, s.Unverifiable, s.Lost)
	}
}

func TestRunFindsLostPlants(t *testing.T) {
	var mu sync.Mutex
	dropped := map[int64]bool{}
	n := 0
	store := &fakeStore{plants: map[int64]string{}, forget: func(id int64) bool {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n%10 == 0 && !dropped[id] {
			dropped[id] = true
			return true
		}
		return false
	}}
	s := runAgainst(t, store)
	if len(s.Lost) == 0 || len(s.Lost) != len(dropped) {
		t.Fatalf("lost %d, dropped %d", len(s.Lost), len(dropped))
	}
	for _, id := range s.Lost {
		if !dropped[id] {
			t.Errorf("id %d reported lost but was stored", id)
		}
	}
	if s.Verified+len(s.Lost) != s.Acknowledged {
		t.Errorf("verified %d + lost %d != acknowledged %d", s.Verified, len(s.Lost), s.Acknowledged)
	}
}

func TestRunCountsUnavailableAndMissingRetryAfter(t *testing.T) {
	store := &fakeStore{plants: map[int64]string{}, unavailable: true, noRetryAfter: true}
	srv := httptest.NewServer(store)
	defer srv.Close()
	go func() {
		time.Sleep(250 * time.Millisecond)
		store.mu.Lock()
		store.unavailable = false
		store.mu.Unlock()
	}()
	s := run(context.Background(), options{url: srv.URL, token: "tok", rate: 400, duration: 600 * time.Millisecond,
		timeout: 2 * time.Second, verifyFor: 5 * time.Second, maxInFlight: 100})
	if s.Unavailable == 0 || s.NoRetryAfter != s.Unavailable || s.Codes[503] != s.Unavailable {
		t.Fatalf("503s %d, without Retry-After %d, codes %v", s.Unavailable, s.NoRetryAfter, s.Codes)
	}
	if s.First503 == 0 || s.Last503 < s.First503 || s.FirstOKAfter503 <= s.Last503 {
		t.Errorf("first 503 %d, last %d, first 200 after %d", s.First503, s.Last503, s.FirstOKAfter503)
	}
}

func TestRunCountsTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close() // an answerless close: EOF at the client
	}))
	defer srv.Close()
	s := run(context.Background(), options{url: srv.URL, token: "tok", rate: 200, duration: 200 * time.Millisecond,
		timeout: time.Second, verifyFor: time.Second, maxInFlight: 100})
	if s.TransportErrors != s.Sent || s.Sent == 0 || len(s.ErrorSamples) == 0 || s.Acknowledged != 0 {
		t.Fatalf("sent %d, transport errors %d, samples %v", s.Sent, s.TransportErrors, s.ErrorSamples)
	}
	if s.FirstTransportError != s.Start || s.LastTransportError != s.End {
		t.Errorf("transport errors from %d to %d, want the whole run, %d to %d", s.FirstTransportError, s.LastTransportError, s.Start, s.End)
	}
}

// TestRunResendsOnIdleClose: a kept-alive connection closed unanswered, as
// a draining replica closes its idle ones, costs no request: the creates are
// marked idempotent, so the transport sends them again on a new connection.
func TestRunResendsOnIdleClose(t *testing.T) {
	store := &fakeStore{plants: map[int64]string{}}
	var mu sync.Mutex
	served := map[string]int{} // requests per connection
	closed := 0
	s := runAgainst(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served[r.RemoteAddr]++
		second := served[r.RemoteAddr] == 2
		if second {
			closed++
		}
		mu.Unlock()
		if second {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		store.ServeHTTP(w, r)
	}))
	if closed == 0 {
		t.Fatal("no connection was reused, so none was closed under a request")
	}
	if s.TransportErrors != 0 || s.Codes[200] != s.Sent || s.Verified != s.Acknowledged {
		t.Fatalf("%d connections closed under a request: sent %d, codes %v, transport errors %d %v, verified %d of %d",
			closed, s.Sent, s.Codes, s.TransportErrors, s.ErrorSamples, s.Verified, s.Acknowledged)
	}
}

func TestFirstToken(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ file, want string }{
		{"# comment\n\nsha256:abcd\n  tok1 name=a scopes=plants:read\ntok2\n", "tok1"},
		{"sha256:abcd\n", ""},
	} {
		p := filepath.Join(dir, "tokens")
		if err := os.WriteFile(p, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := firstToken(p)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("firstToken(%q) = %q, %v; want %q", tc.file, got, err, tc.want)
		}
	}
}

// TestScenariosReadSummaryFields: every field the cluster scenarios read
// from a load's summary (jq on "$s" in cluster-test.sh and
// cluster-test.d/*.sh) is one the summary has.
// A Gateway's own answers (502, 504) are counted and sampled with the time
// they were sent, so a failed run says when in its disruption they fell.
func TestRunSamplesUnexpectedAnswers(t *testing.T) {
	store := &fakeStore{plants: map[int64]string{}}
	var n atomic.Int64
	s := runAgainst(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%20 == 0 {
			http.Error(w, "Bad Gateway", http.StatusBadGateway)
			return
		}
		store.ServeHTTP(w, r)
	}))
	if s.Codes[502] == 0 || len(s.AnswerSamples) != min(s.Codes[502], 5) {
		t.Fatalf("codes %v, samples %q", s.Codes, s.AnswerSamples)
	}
	sample := regexp.MustCompile(`^502 sent=(\d{13}) after=\d+ms "Bad Gateway"$`)
	for _, a := range s.AnswerSamples {
		m := sample.FindStringSubmatch(a)
		if m == nil {
			t.Fatalf("sample %q, want %v", a, sample)
		}
		if at, _ := strconv.ParseInt(m[1], 10, 64); at < s.Start || at > s.End {
			t.Errorf("sample %q sent outside the run [%d, %d]", a, s.Start, s.End)
		}
	}
	if s.Verified != s.Acknowledged || s.Acknowledged != s.Codes[200] {
		t.Errorf("acknowledged %d, verified %d, codes %v", s.Acknowledged, s.Verified, s.Codes)
	}
}

func TestScenariosReadSummaryFields(t *testing.T) {
	b, err := json.Marshal(Summary{})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	scripts, _ := filepath.Glob("../cluster-test.d/*.sh")
	scripts = append(scripts, "../cluster-test.sh")
	// ".Name" in a filter, or "Name" as a key of an object it builds.
	name := regexp.MustCompile(`\.([A-Z][A-Za-z0-9]*)|[{,] *([A-Z][A-Za-z0-9]*) *[,:}]`)
	read := 0
	for _, path := range scripts {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			if !strings.Contains(line, `<<<"$s"`) {
				continue
			}
			for _, m := range name.FindAllStringSubmatch(line, -1) {
				read++
				if _, ok := fields[m[1]+m[2]]; !ok {
					t.Errorf("%s:%d reads %s, which the summary lacks", path, i+1, m[1]+m[2])
				}
			}
		}
	}
	if read < 15 {
		t.Fatalf("found %d reads of the summary in %v; has the harness moved?", read, scripts)
	}
}

// fakeSubscriber answers /missing as k8s-webhook-receiver does, from the ids
// announced to it.
type fakeSubscriber struct {
	mu        sync.Mutex
	announced map[int64]bool
}

func (f *fakeSubscriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/missing" {
		http.NotFound(w, r)
		return
	}
	var ids []int64
	if err := json.NewDecoder(r.Body).Decode(&ids); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	missing := []int64{}
	for _, id := range ids {
		if !f.announced[id] {
			missing = append(missing, id)
		}
	}
	_ = json.NewEncoder(w).Encode(missing)
}

func TestRunLooksForEveryAcknowledgedPlantsEvent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		skip    func(n int) bool // the nth create's event never sent
		path    string           // of the subscriber's URL
		retries int
		missing bool
		broken  bool
	}{
		{name: "every event delivered", skip: func(int) bool { return false }},
		{name: "every event delivered, creates through the generated client", skip: func(int) bool { return false }, retries: 3},
		{name: "every 7th event lost", skip: func(n int) bool { return n%7 == 0 }, missing: true},
		{name: "no subscriber there", skip: func(int) bool { return false }, path: "/nothing", missing: true, broken: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := &fakeSubscriber{announced: map[int64]bool{}}
			subSrv := httptest.NewServer(sub)
			defer subSrv.Close()
			var n atomic.Int64
			skipped := map[int64]bool{}
			store := &fakeStore{plants: map[int64]string{}, forget: func(id int64) bool {
				sub.mu.Lock()
				defer sub.mu.Unlock()
				if tc.skip(int(n.Add(1))) {
					skipped[id] = true
				} else {
					sub.announced[id] = true
				}
				return false
			}}
			srv := httptest.NewServer(store)
			defer srv.Close()
			s := run(context.Background(), options{
				url: srv.URL, token: "tok", rate: 400, duration: 300 * time.Millisecond,
				timeout: 2 * time.Second, verifyFor: time.Second, maxInFlight: 100, eventsURL: subSrv.URL + tc.path,
				retries: tc.retries,
			})
			if s.Acknowledged == 0 || s.EventsChecked != s.Acknowledged {
				t.Fatalf("acknowledged %d, events checked %d", s.Acknowledged, s.EventsChecked)
			}
			if (s.EventsError != "") != tc.broken {
				t.Errorf("events error %q", s.EventsError)
			}
			switch {
			case !tc.missing && s.EventsMissing != 0:
				t.Errorf("%d events missing, want none", s.EventsMissing)
			case tc.missing && !tc.broken && s.EventsMissing != len(skipped):
				t.Errorf("%d events missing, want the %d never announced", s.EventsMissing, len(skipped))
			case tc.broken && s.EventsMissing != s.Acknowledged:
				t.Errorf("%d events missing with no subscriber to ask, want all %d", s.EventsMissing, s.Acknowledged)
			}
			for _, id := range s.EventsMissingSample {
				if !tc.broken && !skipped[id] {
					t.Errorf("id %d reported missing but announced", id)
				}
			}
		})
	}
}

// TestRunThroughTheGeneratedClient: with -retries the creates go through
// api/client, which retries a 503 with the same body: what its caller sees
// is the answer after the retries. Without, every 503 is counted as sent.
func TestRunThroughTheGeneratedClient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int
		want    int // the status every create ends with
	}{
		{"plain HTTP: the first answer", 0, http.StatusServiceUnavailable},
		{"the generated client, 3 attempts", 3, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeStore{plants: map[int64]string{}}
			var mu sync.Mutex
			tried := map[string]bool{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				key := r.Header.Get("Idempotency-Key")
				mu.Lock()
				first := !tried[key]
				tried[key] = true
				mu.Unlock()
				if first && r.Header.Get("Authorization") == "Bearer tok" {
					w.WriteHeader(http.StatusServiceUnavailable) // no Retry-After: the client's backoff
					return
				}
				store.ServeHTTP(w, r)
			}))
			defer srv.Close()
			s := run(context.Background(), options{
				url: srv.URL, token: "tok", rate: 200, duration: 300 * time.Millisecond,
				timeout: 2 * time.Second, verifyFor: 5 * time.Second, maxInFlight: 100, retries: tc.retries,
			})
			if s.Sent == 0 || s.Codes[tc.want] != s.Sent || s.TransportErrors != 0 {
				t.Fatalf("sent %d, codes %v, transport errors %d %v; want every one %d", s.Sent, s.Codes, s.TransportErrors, s.ErrorSamples, tc.want)
			}
			if tc.want == http.StatusOK && (s.Verified != s.Sent || len(s.Lost) != 0) {
				t.Errorf("verified %d of %d, lost %v", s.Verified, s.Sent, s.Lost)
			}
		})
	}
}

// A POST /stop on -stop-addr ends the sending long before -duration; the
// plants acknowledged so far are still checked. Anything else there is 404
// and stops nothing.
func TestStopEndsTheSendingEarly(t *testing.T) {
	srv := httptest.NewServer(&fakeStore{plants: map[int64]string{}})
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	stopURL := "http://" + ln.Addr().String()
	o := options{url: srv.URL, token: "tok", rate: 400, duration: time.Minute,
		timeout: 2 * time.Second, verifyFor: 5 * time.Second, maxInFlight: 100, stop: serveStop(ln)}
	codes := make(chan []int, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		var got []int
		for _, req := range []struct{ method, path string }{{http.MethodGet, "/stop"}, {http.MethodPost, "/other"}, {http.MethodPost, "/stop"}, {http.MethodPost, "/stop"}} {
			r, err := http.NewRequest(req.method, stopURL+req.path, nil)
			if err != nil {
				panic(err)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				got = append(got, 0)
				continue
			}
			resp.Body.Close()
			got = append(got, resp.StatusCode)
		}
		codes <- got
	}()
	s := run(context.Background(), o)
	// A minute at 400/s is 24,000 creates: the stop came long before.
	if s.Sent == 0 || s.Sent > 4000 {
		t.Fatalf("sent %d: want the sending ended by the stop, about 0.3 s in", s.Sent)
	}
	if s.Acknowledged != s.Sent || s.Verified != s.Acknowledged {
		t.Errorf("acknowledged %d of %d sent, verified %d", s.Acknowledged, s.Sent, s.Verified)
	}
	if got := <-codes; !slices.Equal(got, []int{404, 404, 204, 204}) {
		t.Errorf("GET /stop, POST /other, POST /stop twice: %v, want [404 404 204 204]", got)
	}
}
