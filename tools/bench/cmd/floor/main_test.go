package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	domain "github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
)

// The floor keeps the contract's observable behaviour for valid requests:
// 200 and the Plant, 200 again for the same body, 409 for a different one,
// stored under the service's key.
func TestFloor(t *testing.T) {
	rdb := redistest.Start(t).Client()
	f := &floor{rdb: rdb, prefix: "plantstore:"}
	post := func(body string) (int, string) {
		w := httptest.NewRecorder()
		f.create(w, httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(body)))
		return w.Code, w.Body.String()
	}
	for _, c := range []struct {
		body, want string
		code       int
	}{
		{`{"id": 7, "name": "Monstera", "tag": "tropical"}`, `{"name":"Monstera","tag":"tropical"}`, 200},
		{`{"id": 7, "name": "Monstera", "tag": "tropical"}`, `{"name":"Monstera","tag":"tropical"}`, 200},
		{`{"id": 7, "name": "Ficus"}`, `{"name":"Monstera","tag":"tropical"}`, 409},
		{`{"id": 8, "name": "Ficus"}`, `{"name":"Ficus"}`, 200},
		{`{"id": `, "", 400},
	} {
		code, body := post(c.body)
		if code != c.code || (c.want != "" && body != c.want) {
			t.Errorf("POST %s = %d %s, want %d %s", c.body, code, body, c.code, c.want)
		}
	}
	if v, err := rdb.Get(context.Background(), "plantstore:plant:{8}").Result(); err != nil || v != `{"name":"Ficus"}` {
		t.Errorf("stored value = %q, %v", v, err)
	}
	w := httptest.NewRecorder()
	f.readyz(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != 200 {
		t.Errorf("/readyz = %d", w.Code)
	}
}

// The 1.1.0 routes read and delete what the service's layout holds: GET the
// plant, pages in id order linked by cursors until the last, DELETE once
// (204) then 404, and the deleted plant gone from the listing.
func TestFloorResourceRoutes(t *testing.T) {
	rdb := redistest.Start(t).Client()
	ctx := context.Background()
	const prefix = "plantstore:"
	tropical := "tropical"
	if err := store.Fill(ctx, rdb, prefix, 45, func(i int) domain.Plant { return domain.Plant{ID: int64(i) - 20, Name: "Monstera", Tag: &tropical} }); err != nil { // ids -20 to 24
		t.Fatal(err)
	}
	h := (&floor{rdb: rdb, prefix: prefix}).routes()
	do := func(method, target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
		return w
	}
	for _, c := range []struct {
		method, target string
		code           int
		body           string
	}{
		{"GET", "/plants/-7", 200, `{"id":-7,"name":"Monstera","tag":"tropical"}`},
		{"GET", "/plants/99", 404, ""},
		{"GET", "/plants/x", 400, ""},
		{"GET", "/plants?limit=0", 400, ""},
		{"GET", "/plants?cursor=zz", 400, ""},
		{"DELETE", "/plants/3", 204, ""},
		{"DELETE", "/plants/3", 404, ""},
		{"GET", "/plants/3", 404, ""},
	} {
		w := do(c.method, c.target)
		if w.Code != c.code || (c.body != "" && w.Body.String() != c.body) {
			t.Errorf("%s %s = %d %s, want %d %s", c.method, c.target, w.Code, w.Body, c.code, c.body)
		}
	}
	var got []int64
	pages := 0
	for next := "/plants?limit=20"; next != ""; pages++ {
		w := do("GET", next)
		var page []plantBody
		if err := json.Unmarshal(w.Body.Bytes(), &page); w.Code != 200 || err != nil {
			t.Fatalf("GET %s = %d %s (%v)", next, w.Code, w.Body, err)
		}
		for _, p := range page {
			got = append(got, p.ID)
		}
		next = ""
		if link := w.Header().Get("Link"); link != "" {
			next = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		}
	}
	var want []int64
	for id := int64(-20); id <= 24; id++ {
		if id != 3 {
			want = append(want, id)
		}
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Errorf("walk: %d pages, ids %v, want 3 pages of %v", pages, got, want)
	}
}
