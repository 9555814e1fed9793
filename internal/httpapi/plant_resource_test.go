package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/plant"
)

func (h *harness) do(method, target string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.Header.Set("Authorization", "Bearer test-token")
	return h.serve(r)
}

func seed(t *testing.T, h *harness, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		p := plant.Plant{ID: id, Name: "p" + strconv.FormatInt(id, 10)}
		if id%2 == 0 {
			tag := "even"
			p.Tag = &tag
		}
		if _, _, err := h.store.memory.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGetPlant(t *testing.T) {
	h := newHarness(t, &fakeStore{})
	seed(t, h, -5, 0, 7, math.MinInt64, math.MaxInt64)
	for _, tc := range []struct {
		path, body string
	}{
		{"/plants/7", `{"id":7,"name":"p7"}`},
		{"/plants/0", `{"id":0,"name":"p0","tag":"even"}`},
		{"/plants/-5", `{"id":-5,"name":"p-5"}`},
		{"/plants/-9223372036854775808", `{"id":-9223372036854775808,"name":"p-9223372036854775808","tag":"even"}`},
		{"/plants/9223372036854775807", `{"id":9223372036854775807,"name":"p9223372036854775807"}`},
	} {
		rec := h.do(http.MethodGet, tc.path)
		if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != tc.body {
			t.Errorf("GET %s = %d %s, want 200 %s", tc.path, rec.Code, rec.Body, tc.body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET %s Content-Type %q", tc.path, ct)
		}
	}
	msg := checkRecError(t, h.do(http.MethodGet, "/plants/8"), http.StatusNotFound, apierror.PlantNotFound)
	if !strings.Contains(msg, "8") {
		t.Errorf("404 message %q does not name the id", msg)
	}
}

// TestPlantPathID: the {id} of a path is a canonical decimal int64 (contract
// section 9); everything else is 40003, or 40004 outside int64.
func TestPlantPathID(t *testing.T) {
	h := newHarness(t, &fakeStore{})
	for _, tc := range []struct {
		id   string
		code apierror.Code
	}{
		{"1", 0}, {"-1", 0}, {"0", 0}, {"9223372036854775807", 0}, {"-9223372036854775808", 0},
		{"01", apierror.WrongType}, {"-01", apierror.WrongType}, {"00", apierror.WrongType},
		{"-0", apierror.WrongType}, {"+1", apierror.WrongType}, {"-", apierror.WrongType},
		{"1.0", apierror.WrongType}, {"1e3", apierror.WrongType}, {"0x10", apierror.WrongType},
		{"abc", apierror.WrongType}, {"%201", apierror.WrongType}, {"1%20", apierror.WrongType},
		{"١", apierror.WrongType}, // an Arabic-Indic digit: a digit, not a decimal ASCII one
		{"9223372036854775808", apierror.OutOfRange}, {"-9223372036854775809", apierror.OutOfRange},
		{"99999999999999999999999999", apierror.OutOfRange},
		{"-" + strings.Repeat("9", 500), apierror.OutOfRange},
		{strings.Repeat("x", 500), apierror.WrongType},
	} {
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			rec := h.do(method, "/plants/"+tc.id)
			if tc.code == 0 {
				if rec.Code != http.StatusNotFound {
					t.Errorf("%s /plants/%s = %d, want the 404 of a valid, absent id", method, tc.id, rec.Code)
				}
				continue
			}
			msg := checkRecError(t, rec, http.StatusBadRequest, tc.code)
			if len(msg) > 200 {
				t.Errorf("%s /plants/%.20s: message of %d bytes echoes too much", method, tc.id, len(msg))
			}
		}
	}
}

func TestDeletePlant(t *testing.T) {
	h := newHarness(t, &fakeStore{})
	seed(t, h, 3, 4)
	rec := h.do(http.MethodDelete, "/plants/3")
	if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
		t.Fatalf("DELETE /plants/3 = %d %q, want 204 and no body", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "" {
		t.Errorf("204 with Content-Type %q", ct)
	}
	checkRecError(t, h.do(http.MethodGet, "/plants/3"), http.StatusNotFound, apierror.PlantNotFound)
	checkRecError(t, h.do(http.MethodDelete, "/plants/3"), http.StatusNotFound, apierror.PlantNotFound)
	if rec := h.do(http.MethodGet, "/plants/4"); rec.Code != http.StatusOK {
		t.Fatalf("the other plant: GET = %d", rec.Code)
	}
}

var nextLink = regexp.MustCompile(`^<(/plants\?[^>]+)>; rel="next"$`)

// walk follows the next links from target and returns every page's ids.
func walk(t *testing.T, h *harness, target string) [][]int64 {
	t.Helper()
	var pages [][]int64
	for range 1000 {
		rec := h.do(http.MethodGet, target)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", target, rec.Code, rec.Body)
		}
		var body []struct {
			ID   *int64  `json:"id"`
			Name string  `json:"name"`
			Tag  *string `json:"tag"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("GET %s body %s: %v", target, rec.Body, err)
		}
		var ids []int64
		for _, p := range body {
			if p.ID == nil || p.Name != "p"+strconv.FormatInt(*p.ID, 10) {
				t.Fatalf("listed %+v", p)
			}
			ids = append(ids, *p.ID)
		}
		pages = append(pages, ids)
		link := rec.Header().Get("Link")
		if link == "" {
			return pages
		}
		m := nextLink.FindStringSubmatch(link)
		if m == nil {
			t.Fatalf("Link %q is not <relative URL>; rel=\"next\"", link)
		}
		target = m[1]
	}
	t.Fatal("the walk did not end")
	return nil
}

func TestListPlants(t *testing.T) {
	h := newHarness(t, &fakeStore{})
	if got := walk(t, h, "/plants"); len(got) != 1 || len(got[0]) != 0 {
		t.Fatalf("empty store: pages %v, want one empty page", got)
	}
	rec := h.do(http.MethodGet, "/plants")
	if strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Fatalf("empty list body %q, want []", rec.Body)
	}

	var want []int64
	for i := range int64(45) {
		want = append(want, i*1000-20000)
	}
	want = append([]int64{math.MinInt64}, append(want, math.MaxInt64)...)
	seed(t, h, want...)
	for _, tc := range []struct {
		target string
		sizes  []int
	}{
		{"/plants", []int{20, 20, 7}},
		{"/plants?limit=20", []int{20, 20, 7}},
		{"/plants?limit=1", nil},
		{"/plants?limit=47", []int{47}},
		{"/plants?limit=46", []int{46, 1}},
		{"/plants?limit=100&other=ignored", []int{47}},
		{"/plants?limit=7&limit=500", []int{7, 7, 7, 7, 7, 7, 5}}, // the first value counts
	} {
		pages := walk(t, h, tc.target)
		var got []int64
		var sizes []int
		for _, p := range pages {
			got = append(got, p...)
			sizes = append(sizes, len(p))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("walk from %s listed %v, want %v", tc.target, got, want)
		}
		if tc.sizes != nil && fmt.Sprint(sizes) != fmt.Sprint(tc.sizes) {
			t.Errorf("walk from %s: page sizes %v, want %v", tc.target, sizes, tc.sizes)
		}
	}
	// The next link keeps the page's limit.
	link := h.do(http.MethodGet, "/plants?limit=3").Header().Get("Link")
	m := nextLink.FindStringSubmatch(link)
	if m == nil {
		t.Fatalf("Link %q", link)
	}
	u, _ := url.Parse(m[1])
	if u.Query().Get("limit") != "3" || u.Query().Get("cursor") == "" {
		t.Errorf("next link %s does not carry limit=3 and a cursor", m[1])
	}
}

func TestListPlantsBadQuery(t *testing.T) {
	h := newHarness(t, &fakeStore{})
	seed(t, h, 1, 2, 3)
	good := httpapi.EncodeCursor(1)
	for _, tc := range []struct {
		query string
		code  apierror.Code
	}{
		{"limit=0", apierror.BadLimit}, {"limit=101", apierror.BadLimit}, {"limit=-1", apierror.BadLimit},
		{"limit=", apierror.BadLimit}, {"limit=ten", apierror.BadLimit}, {"limit=1.5", apierror.BadLimit},
		{"limit=99999999999999999999", apierror.BadLimit}, {"limit=%2010", apierror.BadLimit},
		{"cursor=", apierror.BadCursor}, {"cursor=abc", apierror.BadCursor},
		{"cursor=" + good[:len(good)-1], apierror.BadCursor},
		{"cursor=" + good + "A", apierror.BadCursor},
		{"cursor=" + flipLast(good), apierror.BadCursor},
		{"cursor=" + url.QueryEscape(good+"\n"), apierror.BadCursor},
		{"limit=5&cursor=nope", apierror.BadCursor},
		{"limit=500&cursor=" + good, apierror.BadLimit},
	} {
		checkRecError(t, h.do(http.MethodGet, "/plants?"+tc.query), http.StatusBadRequest, tc.code)
	}
	pages := walk(t, h, "/plants?cursor="+good)
	if fmt.Sprint(pages) != "[[2 3]]" {
		t.Errorf("from the cursor after 1: %v, want [[2 3]]", pages)
	}
}

func flipLast(s string) string {
	b := []byte(s)
	if b[len(b)-1] == 'A' {
		b[len(b)-1] = 'B'
	} else {
		b[len(b)-1] = 'A'
	}
	return string(b)
}

func TestCursorRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, id := range []int64{math.MinInt64, -1, 0, 1, 1 << 53, 1<<53 + 1, math.MaxInt64} {
		c := httpapi.EncodeCursor(id)
		if seen[c] {
			t.Fatalf("cursor %s twice", c)
		}
		seen[c] = true
		if url.QueryEscape(c) != c {
			t.Errorf("cursor %q needs escaping in a query", c)
		}
		got, err := httpapi.DecodeCursor(c)
		if err != nil || got != id {
			t.Errorf("DecodeCursor(EncodeCursor(%d)) = %d, %v", id, got, err)
		}
	}
}

// failingResource is a store whose reads, lists and deletes fail with err.
type failingResource struct{ err error }

func (f failingResource) Get(context.Context, int64) (plant.Plant, error) {
	return plant.Plant{}, f.err
}
func (f failingResource) Delete(context.Context, int64) error { return f.err }
func (f failingResource) List(context.Context, *int64, int) (plant.Page, error) {
	return plant.Page{}, f.err
}

// slowResource answers only when its context ends.
type slowResource struct{}

func (slowResource) Get(ctx context.Context, _ int64) (plant.Plant, error) {
	<-ctx.Done()
	return plant.Plant{}, fmt.Errorf("%w: %w", plant.ErrUnavailable, ctx.Err())
}
func (slowResource) Delete(ctx context.Context, _ int64) error {
	<-ctx.Done()
	return fmt.Errorf("%w: %w", plant.ErrUnavailable, ctx.Err())
}
func (slowResource) List(ctx context.Context, _ *int64, _ int) (plant.Page, error) {
	<-ctx.Done()
	return plant.Page{}, fmt.Errorf("%w: %w", plant.ErrUnavailable, ctx.Err())
}

// TestResourceStoreFailures: an unavailable store is 503 with Retry-After,
// any other failure 500 revealing nothing; a store that never answers is cut
// off by the store timeout.
func TestResourceStoreFailures(t *testing.T) {
	type store interface {
		httpapi.PlantGetter
		httpapi.PlantDeleter
		httpapi.PlantLister
	}
	for _, tc := range []struct {
		name    string
		store   store
		timeout time.Duration
		code    apierror.Code
	}{
		{"unavailable", failingResource{fmt.Errorf("%w: dial tcp: refused", plant.ErrUnavailable)}, time.Second, apierror.StoreUnavailable},
		{"broken", failingResource{errors.New("WRONGTYPE secret detail")}, time.Second, apierror.Internal},
		{"slow", slowResource{}, 50 * time.Millisecond, apierror.StoreUnavailable},
	} {
		handlers := map[string]http.Handler{
			http.MethodGet + " /plants/1":    httpapi.NewGetPlantHandler(tc.store, tc.timeout, zap.NewNop()),
			http.MethodDelete + " /plants/1": httpapi.NewDeletePlantHandler(tc.store, tc.timeout, zap.NewNop()),
			http.MethodGet + " /plants":      httpapi.NewListPlantsHandler(tc.store, tc.timeout, zap.NewNop()),
		}
		router := httpapi.NewRouter(httpapi.RouterParams{
			CreatePlant: http.NotFoundHandler(), OpenAPI: http.NotFoundHandler(),
			GetPlant:     handlers[http.MethodGet+" /plants/1"],
			DeletePlant:  handlers[http.MethodDelete+" /plants/1"],
			ListPlants:   handlers[http.MethodGet+" /plants"],
			Authenticate: func(next http.Handler) http.Handler { return next },
		})
		for route := range handlers {
			method, path, _ := strings.Cut(route, " ")
			t.Run(tc.name+" "+route, func(t *testing.T) {
				rec := httptest.NewRecorder()
				router.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
				msg := checkRecError(t, rec, tc.code.Status(), tc.code)
				if tc.code == apierror.StoreUnavailable && rec.Header().Get("Retry-After") != "1" {
					t.Errorf("503 without Retry-After: %v", rec.Header())
				}
				if strings.Contains(msg, "WRONGTYPE") || strings.Contains(msg, "dial") {
					t.Errorf("message %q reveals the store's error", msg)
				}
			})
		}
	}
}
