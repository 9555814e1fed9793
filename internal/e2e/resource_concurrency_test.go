package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store/storetest"
)

// TestConcurrentWalks checks contract section 9's walk guarantee as a client
// sees it: walks that follow the Link rel="next" from the first page of GET
// /plants, while other clients POST and DELETE, each checked against the
// history of the changes the service acknowledged (storetest.History), on the
// embedded store and on Redis.
func TestConcurrentWalks(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		concurrentWalksHTTP(t, startService(t, options{}))
	})
	t.Run("redis", func(t *testing.T) {
		concurrentWalksHTTP(t, startService(t, options{RedisAddr: redistest.Start(t).Addr}))
	})
}

// plantsAPI is a goroutine-safe client of the resource routes: no t.Fatal.
type plantsAPI struct {
	s      *service
	client *http.Client
}

func (a plantsAPI) do(method, path, body string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(method, a.s.API+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.s.Token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

func walkedBody(id int64) string { return fmt.Sprintf(`{"id": %d, "name": "walked %d"}`, id, id) }

// create POSTs id's plant and records it in h; want is 200.
func (a plantsAPI) create(h *storetest.History, id int64) error {
	call := h.Tick()
	status, _, body, err := a.do(http.MethodPost, "/plants", walkedBody(id))
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("POST %d: %d %s %v", id, status, body, err)
	}
	h.Created(id, call)
	return nil
}

// remove DELETEs id's plant and records it in h; want is 204.
func (a plantsAPI) remove(h *storetest.History, id int64) error {
	call := h.Tick()
	status, _, body, err := a.do(http.MethodDelete, fmt.Sprintf("/plants/%d", id), "")
	if err != nil || status != http.StatusNoContent {
		return fmt.Errorf("DELETE %d: %d %s %v", id, status, body, err)
	}
	h.Deleted(id, call)
	return nil
}

var nextLink = regexp.MustCompile(`^<(/plants\?[^>]*)>; rel="next"$`)

// walk follows the next links from GET /plants?limit=limit to the last page
// and returns the ids listed, bracketed by ticks of h.
func (a plantsAPI) walk(h *storetest.History, limit int) (start, end int64, ids []int64, pages int, err error) {
	start = h.Tick()
	path := fmt.Sprintf("/plants?limit=%d", limit)
	for {
		status, header, body, err := a.do(http.MethodGet, path, "")
		if err != nil || status != http.StatusOK {
			return 0, 0, nil, pages, fmt.Errorf("GET %s: %d %s %v", path, status, body, err)
		}
		pages++
		var page []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return 0, 0, nil, pages, fmt.Errorf("GET %s: %w: %s", path, err, body)
		}
		if len(page) > limit {
			return 0, 0, nil, pages, fmt.Errorf("GET %s: %d plants", path, len(page))
		}
		for _, p := range page {
			if p.Name != fmt.Sprint("walked ", p.ID) {
				return 0, 0, nil, pages, fmt.Errorf("GET %s lists %+v, which no POST stored", path, p)
			}
			ids = append(ids, p.ID)
		}
		link := header.Get("Link")
		if link == "" {
			break
		}
		m := nextLink.FindStringSubmatch(link)
		if m == nil {
			return 0, 0, nil, pages, fmt.Errorf("GET %s: Link %q is not a next link", path, link)
		}
		path = m[1]
		if pages > 1<<14 {
			return 0, 0, nil, pages, fmt.Errorf("the walk does not end")
		}
	}
	return start, h.Tick(), ids, pages, nil
}

// concurrentWalksHTTP is storetest's concurrent walks through the API: 120
// ids, 3/8 created before the walks and kept, 1/8 created and deleted
// before them, 4/8 created and deleted by churners all along.
func concurrentWalksHTTP(t *testing.T, s *service) {
	const (
		n        = 120
		churners = 3
		walkers  = 2
		walks    = 10 // each
	)
	api := plantsAPI{s: s, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: churners + walkers}, Timeout: client.Timeout}}
	h := storetest.NewHistory()
	id := func(k int) int64 { return int64(k-n/2) * ((1<<63 - 1) / 128) }
	var churn [churners][]int64
	for k := range n {
		switch k % 8 {
		case 0, 1, 2:
			if err := api.create(h, id(k)); err != nil {
				t.Fatal(err)
			}
		case 3:
			if err := api.create(h, id(k)); err != nil {
				t.Fatal(err)
			}
			if err := api.remove(h, id(k)); err != nil {
				t.Fatal(err)
			}
		default:
			churn[k%churners] = append(churn[k%churners], id(k))
		}
	}

	var (
		stop     atomic.Bool
		mu       sync.Mutex
		problems []string
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		problems = append(problems, err.Error())
		mu.Unlock()
		stop.Store(true)
	}
	for c := range churners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			present := map[int64]bool{}
			for i := 0; !stop.Load(); i++ {
				id := churn[c][(i*7)%len(churn[c])]
				var err error
				if present[id] {
					err = api.remove(h, id)
				} else {
					err = api.create(h, id)
				}
				if err != nil {
					fail(err)
					return
				}
				present[id] = !present[id]
			}
		}()
	}
	type walkRec struct {
		start, end int64
		ids        []int64
		limit      int
	}
	var recs []walkRec
	var pages int
	var walking sync.WaitGroup
	for w := range walkers {
		walking.Add(1)
		go func() {
			defer walking.Done()
			for i := range walks {
				limit := []int{1, 5, 20, 100}[(w+i)%4]
				start, end, ids, p, err := api.walk(h, limit)
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				recs = append(recs, walkRec{start, end, ids, limit})
				pages += p
				mu.Unlock()
			}
		}()
	}
	walking.Wait()
	stop.Store(true)
	wg.Wait()
	if len(problems) > 0 {
		t.Fatalf("%d problem(s):\n%s", len(problems), strings.Join(problems, "\n"))
	}
	concurrent, broken := 0, 0
	for i, r := range recs {
		if h.ChangesDuring(r.start, r.end) > 0 {
			concurrent++
		}
		if ps := h.CheckWalk(r.start, r.end, r.ids); len(ps) > 0 {
			broken++
			t.Errorf("walk %d (limit %d) breaks the walk guarantee:\n  %s", i, r.limit, strings.Join(ps[:min(len(ps), 10)], "\n  "))
		}
	}
	if len(recs) != walkers*walks {
		t.Fatalf("%d walks, want %d", len(recs), walkers*walks)
	}
	if concurrent == 0 {
		t.Errorf("none of the %d walks saw a change while it ran", len(recs))
	}
	// Quiet: one walk lists exactly what the history says exists.
	start, end, ids, _, err := api.walk(h, 7)
	if err != nil {
		t.Fatal(err)
	}
	if ps := h.CheckWalk(start, end, ids); len(ps) > 0 || len(ids) != len(h.Present()) {
		t.Errorf("a quiet walk listed %d plants, %d exist: %v", len(ids), len(h.Present()), ps)
	}
	t.Logf("WALKS http checked=%d with_concurrent_changes=%d pages=%d changes=%d broken=%d",
		len(recs), concurrent, pages, h.Changes(), broken)
}
