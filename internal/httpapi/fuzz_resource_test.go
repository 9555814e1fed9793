package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/plant"
)

var canonicalInt = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// FuzzPlantID: a path id is accepted exactly when it is the canonical
// decimal form of an int64, and then means that int64; an integer of
// canonical form outside int64 is 40004; everything else 40003.
func FuzzPlantID(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "-1", "01", "+1", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "1e3", " 1", "1 ", "١", "", "-", "0x1f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, e := httpapi.ParsePlantID(s)
		switch {
		case e == nil:
			if strconv.FormatInt(id, 10) != s {
				t.Fatalf("accepted %q as %d, whose canonical form differs", s, id)
			}
		case e.Code == apierror.OutOfRange:
			if !canonicalInt.MatchString(s) || s == "-0" {
				t.Fatalf("%q: 40004 for something not an integer", s)
			}
			if _, err := strconv.ParseInt(s, 10, 64); err == nil {
				t.Fatalf("%q: 40004 for an int64", s)
			}
		case e.Code == apierror.WrongType:
			if _, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(mustParse(s), 10) == s {
				t.Fatalf("%q: 40003 for a canonical int64", s)
			}
			if canonicalInt.MatchString(s) && s != "-0" {
				t.Fatalf("%q: 40003 for an integer of canonical form", s)
			}
		default:
			t.Fatalf("%q: code %d", s, e.Code)
		}
	})
}

func mustParse(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// FuzzListQuery: whatever the query, GET /plants answers a page in id order
// starting after the cursor, or 400 with 40008/40009; the next link's cursor
// is one DecodeCursor accepts; a cursor is accepted only in the one form
// EncodeCursor gives it.
func FuzzListQuery(f *testing.F) {
	for _, q := range []string{"", "limit=5", "limit=0", "limit=100", "limit=101", "cursor=", "cursor=abc",
		"cursor=" + httpapi.EncodeCursor(3), "limit=2&cursor=" + httpapi.EncodeCursor(-10), "limit=%35", "a=b&&limit=3;x"} {
		f.Add(q)
	}
	memory := newMemory()
	for _, id := range []int64{-20, -3, 0, 3, 8, 1 << 60} {
		_, _, _ = memory.Create(context.Background(), plant.Plant{ID: id, Name: "p"})
	}
	list := httpapi.NewListPlantsHandler(memory, time.Second, zap.NewNop())
	f.Fuzz(func(t *testing.T, rawQuery string) {
		req := httptest.NewRequest(http.MethodGet, "/plants", nil)
		req.URL.RawQuery = rawQuery
		rec := httptest.NewRecorder()
		list.ServeHTTP(rec, req)
		query, _ := url.ParseQuery(rawQuery)
		if c, ok := query["cursor"]; ok {
			if id, err := httpapi.DecodeCursor(c[0]); err == nil && httpapi.EncodeCursor(id) != c[0] {
				t.Fatalf("cursor %q accepted but is not the canonical %q", c[0], httpapi.EncodeCursor(id))
			}
		}
		switch rec.Code {
		case http.StatusOK:
			var page []struct {
				ID int64 `json:"id"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
				t.Fatalf("200 body %q: %v", rec.Body, err)
			}
			ids := make([]int64, len(page))
			for i, p := range page {
				ids[i] = p.ID
			}
			if !slices.IsSorted(ids) {
				t.Fatalf("page %v not in id order", ids)
			}
			if c, ok := query["cursor"]; ok && len(ids) > 0 {
				after, _ := httpapi.DecodeCursor(c[0])
				if ids[0] <= after {
					t.Fatalf("page %v does not start after the cursor's %d", ids, after)
				}
			}
			if link := rec.Header().Get("Link"); link != "" {
				m := nextLink.FindStringSubmatch(link)
				if m == nil {
					t.Fatalf("Link %q", link)
				}
				u, _ := url.Parse(m[1])
				if _, err := httpapi.DecodeCursor(u.Query().Get("cursor")); err != nil {
					t.Fatalf("next link %q carries a cursor the service refuses", m[1])
				}
			}
		case http.StatusBadRequest:
			var e struct {
				Error apierror.Code `json:"error"`
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			if e.Error != apierror.BadLimit && e.Error != apierror.BadCursor {
				t.Fatalf("400 with code %d for query %q", e.Error, rawQuery)
			}
		default:
			t.Fatalf("query %q answered %d", rawQuery, rec.Code)
		}
	})
}
