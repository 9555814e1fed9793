package load

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRouteRequestsParse(t *testing.T) {
	for _, tc := range []struct {
		route  Route
		st     State
		method string
		target string
	}{
		{Get{First: 7, N: 1}, State{}, "GET", "/plants/7"},
		{List{Limit: 20}, State{}, "GET", "/plants?limit=20"},
		{List{Limit: 20}, State{walking: true, next: []byte("/plants?cursor=abc&limit=20")}, "GET", "/plants?cursor=abc&limit=20"},
		{List{Limit: 20, Start: "/plants?cursor=deep&limit=20"}, State{}, "GET", "/plants?cursor=deep&limit=20"},
		{NewDelete(-3, 1), State{}, "DELETE", "/plants/-3"},
	} {
		raw, err := tc.route.Append(nil, "127.0.0.1:1", "tok", &tc.st)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(string(raw))))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if req.Method != tc.method || req.URL.RequestURI() != tc.target || req.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("request = %s %s %v, want %s %s", req.Method, req.URL, req.Header, tc.method, tc.target)
		}
	}
}

// A walk follows the next pages until one has none, or for Pages pages,
// then starts again at its first page (Start, or the first of the store).
func TestListWalkLength(t *testing.T) {
	page := func(first int64, next bool) *Response {
		r := &Response{Status: 200, Body: []byte("[" + string(AppendPlant(nil, first)) + "," + string(AppendPlant(nil, first+1)) + "]")}
		if next {
			r.Link = []byte(`</plants?cursor=c` + strconv.FormatInt(first+1, 10) + `&limit=2>; rel="next"`)
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		route List
		want  []string // the targets of the requests, in order
	}{
		{"whole walk", List{Limit: 2}, []string{"/plants?limit=2", "/plants?cursor=c1&limit=2", "/plants?cursor=c3&limit=2", "/plants?limit=2"}},
		{"two pages", List{Limit: 2, Pages: 2}, []string{"/plants?limit=2", "/plants?cursor=c1&limit=2", "/plants?limit=2", "/plants?cursor=c1&limit=2"}},
		{"one deep page", List{Limit: 2, Start: "/plants?cursor=deep&limit=2", Pages: 1}, []string{"/plants?cursor=deep&limit=2", "/plants?cursor=deep&limit=2", "/plants?cursor=deep&limit=2", "/plants?cursor=deep&limit=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st State
			// The store holds plants 0 to 5: pages 0-1, 2-3, 4-5 (the last).
			first := int64(0)
			for i, want := range tc.want {
				raw, err := tc.route.Append(nil, "h", "", &st)
				if err != nil || !strings.HasPrefix(string(raw), "GET "+want+" ") {
					t.Fatalf("request %d = %q, %v; want GET %s", i, raw, err, want)
				}
				if !st.walking {
					first = 0
					if tc.route.Start != "" {
						first = 10
					}
				}
				if err := tc.route.Check(page(first, first < 4 || first == 10), &st); err != nil {
					t.Fatalf("page %d: %v", i, err)
				}
				first += 2
			}
		})
	}
}

func TestDeletePoolEachIDOnce(t *testing.T) {
	d := NewDelete(10, 2)
	var st State
	for _, want := range []string{"/plants/10", "/plants/11"} {
		raw, err := d.Append(nil, "h", "", &st)
		if err != nil || !strings.HasPrefix(string(raw), "DELETE "+want+" ") {
			t.Errorf("Append = %q %v, want DELETE %s", raw, err, want)
		}
	}
	if raw, err := d.Append(nil, "h", "", &st); err != ErrExhausted || len(raw) != 0 {
		t.Errorf("third Append on a pool of 2 = %q %v, want ErrExhausted", raw, err)
	}
	if d.Sent() != 2 {
		t.Errorf("Sent = %d", d.Sent())
	}
}

func TestChecks(t *testing.T) {
	plant := func(id int) string { return fmt.Sprintf(`{"id":%d,"name":"Monstera","tag":"tropical"}`, id) }
	page := func(ids ...int) string {
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = plant(id)
		}
		return "[" + strings.Join(parts, ",") + "]\n"
	}
	next := `</plants?limit=2&cursor=x>; rel="next"`
	for _, tc := range []struct {
		name   string
		route  Route
		st     State
		status int
		link   string
		body   string
		ok     bool
	}{
		{"get", Get{}, State{id: 5}, 200, "", plant(5) + "\n", true},
		{"get other plant", Get{}, State{id: 5}, 200, "", plant(6), false},
		{"get 404", Get{}, State{id: 5}, 404, "", `{"error":40402}`, false},
		{"get other name", Get{}, State{id: 5}, 200, "", `{"id":5,"name":"Ficus"}`, false},
		{"create", Create{}, State{id: 7}, 200, "", `{"name":"Monstera","tag":"tropical"}` + "\n", true},
		{"create answered another plant", Create{}, State{id: 7}, 200, "", `{"name":"Ficus","tag":"tropical"}`, false},
		{"create answered without the tag", Create{}, State{id: 7}, 200, "", `{"name":"Monstera"}`, false},
		{"create answered an empty object", Create{}, State{id: 7}, 200, "", `{}`, false},
		{"create 409", Create{}, State{id: 7}, 409, "", `{"code":40901}`, false},
		{"delete", &Delete{}, State{}, 204, "", "", true},
		{"delete 200", &Delete{}, State{}, 200, "", "", false},
		{"delete 404", &Delete{}, State{}, 404, "", "", false},
		{"first page", List{Limit: 2}, State{}, 200, next, page(-1, 4), true},
		{"last page", List{Limit: 2}, State{walking: true, last: 4}, 200, "", page(9), true},
		{"page not after cursor", List{Limit: 2}, State{walking: true, last: 4}, 200, next, page(4, 5), false},
		{"page out of order", List{Limit: 2}, State{}, 200, next, page(5, 4), false},
		{"short page before next", List{Limit: 2}, State{}, 200, next, page(1), false},
		{"long page", List{Limit: 2}, State{}, 200, "", page(1, 2, 3), false},
		{"empty page", List{Limit: 2}, State{}, 200, "", "[]", false},
		{"not an array", List{Limit: 2}, State{}, 200, "", plant(1), false},
		{"link without next", List{Limit: 2}, State{}, 200, `</plants?cursor=x>; rel="prev"`, page(1, 2), false},
		{"list 500", List{Limit: 2}, State{}, 500, "", page(1), false},
	} {
		r := &Response{Status: tc.status, Link: []byte(tc.link), Body: []byte(tc.body)}
		st := tc.st
		if err := tc.route.Check(r, &st); (err == nil) != tc.ok {
			t.Errorf("%s: Check = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	// A page with a next link sets the walk's next request; the last ends it.
	st := State{}
	_ = List{Limit: 2}.Check(&Response{Status: 200, Link: []byte(next), Body: []byte(page(1, 2))}, &st)
	if !st.walking || string(st.next) != "/plants?limit=2&cursor=x" || st.last != 2 {
		t.Errorf("after a page with next: %+v", st)
	}
	_ = List{Limit: 2}.Check(&Response{Status: 200, Body: []byte(page(3))}, &st)
	if st.walking {
		t.Error("the last page did not end the walk")
	}
}

// fakeStore serves the 1.1.0 routes over the plants 0 to n-1, with cursors
// of its own; broken makes every answer of one route wrong.
type fakeStore struct {
	mu      sync.Mutex
	n       int64 // plants 0 to n-1 exist until deleted
	deletes map[int64]int
	broken  string
}

func (f *fakeStore) has(id int64) bool { return id >= 0 && id < f.n && f.deletes[id] == 0 }

func (f *fakeStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/plants/"), 10, 64)
	switch {
	case r.Method == "DELETE" && err == nil:
		gone := !f.has(id)
		f.deletes[id]++
		if gone || f.broken == "delete" {
			w.WriteHeader(404)
			return
		}
		w.WriteHeader(204)
	case r.Method == "GET" && err == nil:
		if f.broken == "get" {
			id++
		}
		_, _ = w.Write(AppendPlant(nil, id))
	case r.Method == "GET" && r.URL.Path == "/plants":
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		after := int64(-1)
		if c := r.URL.Query().Get("cursor"); c != "" {
			after, _ = strconv.ParseInt(strings.TrimPrefix(c, "c"), 10, 64)
		}
		var ids []string
		id := after + 1
		for ; len(ids) < limit && f.has(id); id++ {
			ids = append(ids, string(AppendPlant(nil, id)))
		}
		if f.has(id) {
			if f.broken == "list" {
				id -= 2 // the next page repeats the last plant
			}
			w.Header().Set("Link", "</plants?"+url.Values{"limit": {strconv.Itoa(limit)}, "cursor": {"c" + strconv.FormatInt(id-1, 10)}}.Encode()+`>; rel="next"`)
		}
		_, _ = w.Write([]byte("[" + strings.Join(ids, ",") + "]"))
	default:
		w.WriteHeader(400)
	}
}

// Each route's closed loop against a fake server: every answer checked and
// good, every delete id sent once; a server that answers one route wrongly
// fails that route's phase.
func TestRouteLoops(t *testing.T) {
	for _, broken := range []string{"", "get", "list", "delete"} {
		t.Run("broken="+broken, func(t *testing.T) {
			// A pool far larger than a phase can use up, however fast the machine.
			f := &fakeStore{n: 1 << 40, deletes: map[int64]int{}, broken: broken}
			tg := serve(t, f, nil)
			del := NewDelete(1000, 1<<40-1000)
			for _, rt := range []struct {
				name  string
				route Route
			}{{"get", Get{First: 0, N: 500}}, {"list", List{Limit: 20}}, {"list", List{Limit: 100}}, {"delete", del}} {
				r, err := tg.With(rt.route).Closed(context.Background(), 4, 20*time.Millisecond, 200*time.Millisecond, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				// Answers over the whole phase: on a loaded machine the window alone may catch none.
				var answered int64
				for _, n := range r.Statuses {
					answered += n
				}
				if answered == 0 {
					t.Errorf("%s: no request answered", rt.name)
				}
				if got, want := r.Failed() > 0, broken == rt.name; got != want {
					t.Errorf("%s: %d failed (%s), want failures %v", rt.name, r.Failed(), r.FirstError, want)
				}
			}
			var extra int64
			if broken == "" {
				// A pool smaller than the phase: the requests past it fail the phase.
				small := NewDelete(50, 5)
				r, err := tg.With(small).Closed(context.Background(), 2, 0, 50*time.Millisecond, nil, nil)
				if err != nil || r.Errors == 0 || !strings.Contains(r.FirstError, ErrExhausted.Error()) {
					t.Errorf("exhausted pool: %d errors (%s), %v", r.Errors, r.FirstError, err)
				}
				extra = small.Sent()
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			for id, n := range f.deletes {
				if n != 1 {
					t.Errorf("id %d deleted %d times", id, n)
				}
			}
			if int64(len(f.deletes)) != del.Sent()+extra || del.Sent() == 0 {
				t.Errorf("%d ids deleted, %d taken from the pools", len(f.deletes), del.Sent()+extra)
			}
		})
	}
}
