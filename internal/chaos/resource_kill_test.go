package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
)

// TestChaosResourceKill kills Redis (SIGKILL) under a mixed load of creates,
// deletes and list pages, and restarts it on the same port and data
// directory. Each worker owns its ids and, like a client honouring 503 and
// Retry-After, repeats a create or a delete until it has a definite answer;
// so every id's last acknowledged change is known. Afterwards nothing
// acknowledged is lost: every acknowledged create is readable unless later
// acknowledged deleted, every acknowledged delete stays deleted (GET 404),
// and a walk of the listing holds exactly the plants that should exist.
// Meanwhile every answer is a success or a well-formed 503 with
// Retry-After: no 500, no transport error, no other status.
func TestChaosResourceKill(t *testing.T) {
	const workers = 8
	before, outage, after := servicetest.Pick(time.Second, 5*time.Second),
		servicetest.Pick(2*time.Second, 15*time.Second), servicetest.Pick(time.Second, 5*time.Second)

	redis := redistest.Start(t, chartRedisArgs(t)...)
	s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr})
	c := &resourceClient{s: s, http: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: workers}}}

	var stop atomic.Bool
	results := make([]*resourceWorker, workers)
	var wg sync.WaitGroup
	for w := range workers {
		results[w] = &resourceWorker{c: c, base: int64(w+1) << 40, rng: rand.New(rand.NewPCG(uint64(w), 7)),
			state: map[int64]bool{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w].run(&stop)
		}()
	}

	time.Sleep(before)
	redis.Stop() // SIGKILL, and waits for the exit
	killed := time.Now()
	time.Sleep(outage)
	redis.Restart() // returns once Redis answers PING, the AOF loaded
	restarted := time.Now()
	time.Sleep(after)
	stop.Store(true)
	wg.Wait()
	c.http.CloseIdleConnections()

	var tally resourceTally
	for w, r := range results {
		tally.add(r)
		for _, p := range r.problems[:min(len(r.problems), 5)] {
			t.Errorf("worker %d: %s", w, p)
		}
	}
	if tally.unavailable == 0 {
		t.Errorf("no request answered 503 during a %v outage", outage)
	}
	if tally.lastOK.Before(restarted) {
		t.Errorf("no change acknowledged after Redis's return (last at %v after the kill)", tally.lastOK.Sub(killed))
	}

	// Every id's last acknowledged change holds: GET each, then walk.
	lost, resurrected := 0, 0
	var want []int64
	for _, r := range results {
		for id, present := range r.state {
			status, _, body, err := c.do(http.MethodGet, fmt.Sprintf("/plants/%d", id), "")
			switch {
			case err != nil:
				t.Fatalf("GET %d after the load: %v", id, err)
			case present && status != http.StatusOK:
				lost++
				if lost <= 5 {
					t.Errorf("acknowledged plant %d: GET %d %s", id, status, body)
				}
			case present && !sameStored(body, id):
				lost++
				t.Errorf("acknowledged plant %d: GET %s, want the plant %s", id, body, createBody(id))
			case !present && status != http.StatusNotFound:
				resurrected++
				if resurrected <= 5 {
					t.Errorf("acknowledged delete of %d: GET %d %s, want 404", id, status, body)
				}
			}
			if present {
				want = append(want, id)
			}
		}
	}
	slices.Sort(want)
	listed, pages, err := c.walk(20)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(listed, want) {
		t.Errorf("a walk after the load listed %d plants, %d should exist", len(listed), len(want))
	}

	servicetest.Report(t, "resource-kill", "creates=%d deletes=%d lists=%d 503=%d retried=%d delete_404_after_503=%d lost=%d resurrected=%d max_503_latency=%s plants=%d pages=%d",
		tally.creates, tally.deletes, tally.lists, tally.unavailable, tally.retried, tally.delete404, lost, resurrected,
		ms(tally.max503), len(want), pages)
}

// resourceClient talks to the API with the service's token; it is safe for
// the workers' goroutines (no t.Fatal).
type resourceClient struct {
	s    *servicetest.Service
	http *http.Client
}

func (c *resourceClient) do(method, path, body string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(method, c.s.API+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.s.Token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

func createBody(id int64) string { return fmt.Sprintf(`{"id": %d, "name": "kept %d"}`, id, id) }

// sameStored: body is GET /plants/{id}'s answer for the plant createBody(id)
// stored.
func sameStored(body []byte, id int64) bool {
	var p struct {
		ID   *int64  `json:"id"`
		Name string  `json:"name"`
		Tag  *string `json:"tag"`
	}
	return json.Unmarshal(body, &p) == nil && p.ID != nil && *p.ID == id && p.Name == fmt.Sprint("kept ", id) && p.Tag == nil
}

// walk lists every page, following the next links.
func (c *resourceClient) walk(limit int) ([]int64, int, error) {
	var ids []int64
	path := fmt.Sprintf("/plants?limit=%d", limit)
	for pages := 1; ; pages++ {
		status, header, body, err := c.do(http.MethodGet, path, "")
		if err != nil || status != http.StatusOK {
			return nil, pages, fmt.Errorf("GET %s: %d %s %v", path, status, body, err)
		}
		var page []struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, pages, fmt.Errorf("GET %s: %w", path, err)
		}
		for _, p := range page {
			ids = append(ids, p.ID)
		}
		link := header.Get("Link")
		if link == "" {
			return ids, pages, nil
		}
		target, ok := strings.CutPrefix(link, "<")
		if ok {
			target, _, ok = strings.Cut(target, `>; rel="next"`)
		}
		if !ok {
			return nil, pages, fmt.Errorf("GET %s: Link %q is not a next link", path, link)
		}
		path = target
	}
}

// resourceWorker creates plants of its own ids, deletes some of them and
// lists the first pages, one request at a time.
type resourceWorker struct {
	c     *resourceClient
	base  int64
	next  int64
	rng   *rand.Rand
	state map[int64]bool // id -> exists, after its last acknowledged change

	creates, deletes, lists, unavailable, retried, delete404 int
	max503                                                   time.Duration
	lastOK                                                   time.Time
	problems                                                 []string
}

func (w *resourceWorker) problem(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

// send sends one request; it reports whether the answer was a 503 (well
// formed, or a problem is recorded) and returns the status.
func (w *resourceWorker) send(method, path, body string) (int, []byte, bool) {
	start := time.Now()
	status, header, reply, err := w.c.do(method, path, body)
	latency := time.Since(start)
	if err != nil {
		w.problem("%s %s: %v", method, path, err)
		return 0, nil, false
	}
	if status != http.StatusServiceUnavailable {
		return status, reply, false
	}
	w.unavailable++
	w.max503 = max(w.max503, latency)
	code, cerr := servicetest.Reply{Status: status, Header: header, Body: reply}.Code()
	if cerr != nil || code != 50301 || header.Get("Retry-After") == "" {
		w.problem("%s %s: 503 with code %d, Retry-After %q (%v): %s", method, path, code, header.Get("Retry-After"), cerr, reply)
	}
	if latency > storeTimeout+clientMargin {
		w.problem("%s %s: 503 after %v, beyond the %v store timeout + %v margin", method, path, latency, storeTimeout, clientMargin)
	}
	return status, reply, true
}

// retry sends a change until it has an answer other than 503, the way a
// client honouring Retry-After would (sooner: the test wants many tries in
// the outage). It gives up only when the load stops.
func (w *resourceWorker) retry(stop *atomic.Bool, method, path, body string) (status int, retried bool, ok bool) {
	var stopped time.Time
	for {
		status, _, unavailable := w.send(method, path, body)
		if !unavailable {
			return status, retried, status != 0
		}
		retried = true
		w.retried++
		// Keep trying past the stop, for a while: the id's state must be
		// known.
		if stop.Load() && stopped.IsZero() {
			stopped = time.Now()
		}
		if !stopped.IsZero() && time.Since(stopped) > 30*time.Second {
			w.problem("%s %s: still 503 30 s after the load stopped, Redis long back", method, path)
			return status, retried, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *resourceWorker) run(stop *atomic.Bool) {
	var present []int64
	for !stop.Load() && len(w.problems) == 0 {
		switch op := w.rng.IntN(10); {
		case op < 5 || len(present) == 0: // create a new plant
			id := w.base + w.next
			w.next++
			status, _, ok := w.retry(stop, http.MethodPost, "/plants", createBody(id))
			if !ok {
				return
			}
			if status != http.StatusOK {
				w.problem("POST %d: %d", id, status)
				return
			}
			w.creates++
			w.state[id] = true
			present = append(present, id)
			w.lastOK = time.Now()
		case op < 8: // delete one of them
			i := w.rng.IntN(len(present))
			id := present[i]
			status, retried, ok := w.retry(stop, http.MethodDelete, fmt.Sprintf("/plants/%d", id), "")
			if !ok {
				return
			}
			switch {
			case status == http.StatusNoContent:
			case status == http.StatusNotFound && retried:
				// An attempt answered 503 yet deleted it (the reply was
				// lost): gone either way (docs/storage.md).
				w.delete404++
			default:
				w.problem("DELETE %d: %d", id, status)
				return
			}
			w.deletes++
			w.state[id] = false
			present = slices.Delete(present, i, i+1)
			w.lastOK = time.Now()
		default: // a list page: 200 or a well-formed 503, never retried
			status, body, unavailable := w.send(http.MethodGet, "/plants?limit=20", "")
			if unavailable || status == 0 {
				continue
			}
			var page []struct {
				ID int64 `json:"id"`
			}
			if status != http.StatusOK || json.Unmarshal(body, &page) != nil {
				w.problem("GET /plants: %d %s", status, body)
				return
			}
			for i := 1; i < len(page); i++ {
				if page[i].ID <= page[i-1].ID {
					w.problem("GET /plants: ids not strictly ascending: %s", body)
				}
			}
			w.lists++
		}
	}
}

// resourceTally sums the workers' counts.
type resourceTally struct {
	creates, deletes, lists, unavailable, retried, delete404 int
	max503                                                   time.Duration
	lastOK                                                   time.Time
}

func (t *resourceTally) add(w *resourceWorker) {
	t.creates += w.creates
	t.deletes += w.deletes
	t.lists += w.lists
	t.unavailable += w.unavailable
	t.retried += w.retried
	t.delete404 += w.delete404
	t.max503 = max(t.max503, w.max503)
	if w.lastOK.After(t.lastOK) {
		t.lastOK = w.lastOK
	}
}
