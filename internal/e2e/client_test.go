package e2e

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	psclient "github.com/plantstore/plantstore/api/client"
	"github.com/plantstore/plantstore/internal/redistest"
)

// The resource routes of API 1.1.0 driven through the Go client generated
// from api/openapi.yaml (api/client), as a Go program would use them. The
// byte-exact checks of the answers stay in contract_test.go.

// newPlantStore returns a client of s with its token.
func newPlantStore(t *testing.T, s *service, opts ...psclient.Option) *psclient.PlantStore {
	t.Helper()
	c, err := psclient.New(s.API, s.Token, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// apiError returns err's *APIError, failing the test when there is none or
// its status or code is not the one wanted.
func apiError(t *testing.T, err error, status int, code int32) *psclient.APIError {
	t.Helper()
	var e *psclient.APIError
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want an *APIError %d", err, err, code)
	}
	if e.Status != status || e.Code != code || e.Message == "" {
		t.Fatalf("APIError %+v, want status %d, code %d and a message", *e, status, code)
	}
	return e
}

func sameTag(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func TestClientResourceFlow(t *testing.T) {
	for _, mode := range redisModes {
		t.Run(mode.name, func(t *testing.T) {
			addr, _ := mode.start(t)
			clientResourceFlow(t, startService(t, options{RedisAddr: addr}))
		})
	}
	t.Run("embedded", func(t *testing.T) {
		clientResourceFlow(t, startService(t, options{}))
	})
}

func clientResourceFlow(t *testing.T, s *service) {
	ctx := t.Context()
	c := newPlantStore(t, s)

	// Create: ids across the int64 range, in no order; with a tag, without,
	// and with an empty one.
	ids := []int64{17, math.MinInt64, 3, -1, 0, math.MaxInt64, -4096, 1 << 40, 5, 2, -2, 11, 8, 1, 13, 7, 21, -9, 4}
	want := map[int64]psclient.StoredPlant{}
	for i, id := range ids {
		p := psclient.NewPlant{Id: id, Name: fmt.Sprintf("plant %d", id)}
		switch i % 3 {
		case 1:
			p.Tag = ptr(fmt.Sprintf("tag %d", i))
		case 2:
			p.Tag = ptr("")
		}
		got, err := c.CreatePlant(ctx, p)
		if err != nil {
			t.Fatalf("create %d: %v", id, err)
		}
		if got.Name != p.Name || !sameTag(got.Tag, p.Tag) {
			t.Fatalf("create %d answered %+v, want the plant sent", id, got)
		}
		want[id] = psclient.StoredPlant{Id: id, Name: p.Name, Tag: p.Tag}
	}

	t.Run("a repeated create is a success, another body a conflict", func(t *testing.T) {
		p := want[3]
		if _, err := c.CreatePlant(ctx, psclient.NewPlant{Id: 3, Name: p.Name, Tag: p.Tag}); err != nil {
			t.Fatalf("repeat: %v", err)
		}
		_, err := c.CreatePlant(ctx, psclient.NewPlant{Id: 3, Name: "another"})
		apiError(t, err, 409, psclient.CodeConflict)
	})

	t.Run("get answers each plant with its id", func(t *testing.T) {
		for id, w := range want {
			got, err := c.GetPlant(ctx, id)
			if err != nil {
				t.Fatalf("get %d: %v", id, err)
			}
			if got.Id != w.Id || got.Name != w.Name || !sameTag(got.Tag, w.Tag) {
				t.Fatalf("get %d = %+v, want %+v", id, got, w)
			}
		}
	})

	// walk lists every plant through the iterator and checks it against want.
	walk := func(t *testing.T, limit int) {
		t.Helper()
		var got []int64
		for p, err := range c.All(ctx, limit) {
			if err != nil {
				t.Fatalf("walk: %v", err)
			}
			w, ok := want[p.Id]
			if !ok || p.Name != w.Name || !sameTag(p.Tag, w.Tag) {
				t.Fatalf("walk yielded %+v, want %+v (known: %v)", p, w, ok)
			}
			got = append(got, p.Id)
		}
		var ids []int64
		for id := range want {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if !slices.Equal(got, ids) {
			t.Fatalf("walk with limit %d yielded %v, want every plant once in ascending id order: %v", limit, got, ids)
		}
	}

	t.Run("the iterator walks every page", func(t *testing.T) {
		for _, limit := range []int{1, 4, 100, 0} {
			walk(t, limit)
		}
		// The walk did page: with no plant deleted, every page but the last is full.
		page, err := c.ListPlants(ctx, 4)
		pages := 1
		for ; err == nil && page.Next != nil; pages++ {
			if len(page.Plants) != 4 {
				t.Fatalf("page %d holds %d plants, want 4", pages, len(page.Plants))
			}
			page, err = c.NextPage(ctx, page)
		}
		if err != nil {
			t.Fatal(err)
		}
		if least := (len(want) + 3) / 4; pages < least {
			t.Fatalf("%d pages of 4 for %d plants", pages, len(want))
		}
	})

	t.Run("delete, then 404 as an APIError", func(t *testing.T) {
		if err := c.DeletePlant(ctx, 5); err != nil {
			t.Fatalf("delete: %v", err)
		}
		delete(want, 5)
		_, err := c.GetPlant(ctx, 5)
		apiError(t, err, 404, psclient.CodePlantNotFound)
		// A repeated DELETE answers 404: the client reports it, since its
		// only attempt certainly reached the service.
		apiError(t, c.DeletePlant(ctx, 5), 404, psclient.CodePlantNotFound)
		walk(t, 3)
		// The id is free again.
		if _, err := c.CreatePlant(ctx, psclient.NewPlant{Id: 5, Name: "again"}); err != nil {
			t.Fatalf("create after delete: %v", err)
		}
		want[5] = psclient.StoredPlant{Id: 5, Name: "again"}
		walk(t, 7)
	})

	t.Run("refusals are APIErrors", func(t *testing.T) {
		_, err := c.ListPlants(ctx, 101)
		apiError(t, err, 400, psclient.CodeInvalidPageLimit)
		wrong, err := psclient.New(s.API, "not-the-token")
		if err != nil {
			t.Fatal(err)
		}
		_, err = wrong.GetPlant(ctx, 3)
		apiError(t, err, 401, psclient.CodeTokenNotAccepted)
	})
}

func ptr[T any](v T) *T { return &v }

// watchingDoer sends through an http.Client and reports each answer's
// status on a channel.
type watchingDoer struct {
	http     *http.Client
	mu       sync.Mutex
	statuses []int
	answered chan int // each status, dropped when nobody reads
}

func newWatchingDoer() *watchingDoer {
	return &watchingDoer{http: &http.Client{Timeout: 10 * time.Second}, answered: make(chan int, 64)}
}

func (d *watchingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.http.Do(req)
	if err == nil {
		d.mu.Lock()
		d.statuses = append(d.statuses, resp.StatusCode)
		d.mu.Unlock()
		select {
		case d.answered <- resp.StatusCode:
		default:
		}
	}
	return resp, err
}

func (d *watchingDoer) Statuses() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int(nil), d.statuses...)
}

// TestClientRetriesThroughARedisOutage: while Redis is down the service
// answers 503 with Retry-After; the client retries GET and the idempotent
// POST a bounded number of times, honouring it, and a create started during
// the outage succeeds once Redis is back.
func TestClientRetriesThroughARedisOutage(t *testing.T) {
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr})
	ctx := t.Context()
	redis.Stop()

	t.Run("bounded: the last 503 is returned", func(t *testing.T) {
		d := newWatchingDoer()
		c := newPlantStore(t, s, psclient.WithHTTPDoer(d), psclient.WithRetries(2))
		_, err := c.GetPlant(ctx, 1)
		e := apiError(t, err, 503, psclient.CodeStoreUnavailable)
		if e.RetryAfter != time.Second {
			t.Fatalf("RetryAfter %v, want the service's 1s", e.RetryAfter)
		}
		if got := d.Statuses(); !slices.Equal(got, []int{503, 503}) {
			t.Fatalf("answers %v, want two 503s", got)
		}
	})

	t.Run("through: a create started during the outage succeeds after it", func(t *testing.T) {
		d := newWatchingDoer()
		c := newPlantStore(t, s, psclient.WithHTTPDoer(d), psclient.WithRetries(30))
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := c.CreatePlant(ctx, psclient.NewPlant{Id: 42, Name: "patient"})
			done <- err
		}()
		select {
		case st := <-d.answered:
			if st != 503 {
				t.Fatalf("first answer during the outage %d, want 503", st)
			}
		case err := <-done:
			t.Fatalf("the create ended before any answer: %v", err)
		case <-ctx.Done():
			t.Fatal("no answer within 60s")
		}
		redis.Restart()
		if err := <-done; err != nil {
			t.Fatalf("create across the outage: %v (answers %v)", err, d.Statuses())
		}
		got := d.Statuses()
		if got[0] != 503 || got[len(got)-1] != 200 {
			t.Fatalf("answers %v, want 503s then a 200", got)
		}
		if p, err := c.GetPlant(ctx, 42); err != nil || p.Name != "patient" {
			t.Fatalf("get after the outage: %+v, %v", p, err)
		}
	})
}

// TestClientWaitsOutTheRateLimit: over its rate the client is answered 429
// with Retry-After; the client waits as told and every call succeeds, and a
// client without retries gets the 429 as an *APIError carrying the wait.
func TestClientWaitsOutTheRateLimit(t *testing.T) {
	s := startService(t, options{Extra: []string{"--rate-limit-default", "2/s"}})
	ctx := t.Context()
	d := newWatchingDoer()
	c := newPlantStore(t, s, psclient.WithHTTPDoer(d), psclient.WithRetries(10))
	if _, err := c.CreatePlant(ctx, psclient.NewPlant{Id: 1, Name: "limited"}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := c.GetPlant(ctx, 1); err != nil {
			t.Fatalf("get %d: %v (answers %v)", i, err, d.Statuses())
		}
	}
	if got := d.Statuses(); !slices.Contains(got, 429) {
		t.Fatalf("answers %v: 7 calls at 2/s were never limited", got)
	}

	once := newPlantStore(t, s, psclient.WithRetries(1))
	var e *psclient.APIError
	for range 5 {
		_, err := once.GetPlant(ctx, 1)
		if err != nil {
			e = apiError(t, err, 429, psclient.CodeRateLimited)
			break
		}
	}
	if e == nil {
		t.Fatal("5 calls without a wait at 2/s were never limited")
	}
	if e.RetryAfter < time.Second {
		t.Fatalf("RetryAfter %v, want the service's whole seconds", e.RetryAfter)
	}
}
