package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestParseSizes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64
	}{
		{"1000000,3000000,10000000", []int64{1_000_000, 3_000_000, 10_000_000}},
		{" 200000 ", []int64{200_000}},
		{"", nil},
		{"5000", nil},          // not above the base
		{"300000,200000", nil}, // not ascending
		{"200000,200000", nil},
		{"1e6", nil},
	} {
		got, err := parseSizes(tc.in, 10_000)
		if !slices.Equal(got, tc.want) || (err == nil) != (tc.want != nil) {
			t.Errorf("parseSizes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// The outbox's subscriber: 503 while down, the created events' ids kept
// while up, other events taken but not counted, a body that is not an
// event refused.
func TestSubscriber(t *testing.T) {
	sub := &subscriber{ids: map[int64]bool{}}
	post := func(body string) int {
		w := httptest.NewRecorder()
		sub.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body)))
		return w.Code
	}
	created := `{"type":"plant.created","data":{"id":7,"name":"Monstera"}}`
	sub.down.Store(true)
	if code := post(created); code != 503 || sub.received(0, 100) != 0 {
		t.Errorf("down: %d, %d received", code, sub.received(0, 100))
	}
	sub.down.Store(false)
	for _, tc := range []struct {
		body string
		code int
	}{
		{created, 204},
		{created, 204}, // a duplicate counts once
		{`{"type":"plant.created","data":{"id":9}}`, 204},
		{`{"type":"plant.deleted","data":{"id":8}}`, 204},
		{`not json`, 400},
	} {
		if code := post(tc.body); code != tc.code {
			t.Errorf("POST %s: %d, want %d", tc.body, code, tc.code)
		}
	}
	if n := sub.received(0, 100); n != 2 {
		t.Errorf("%d created events received, want 2 (7 and 9)", n)
	}
	if n := sub.received(8, 100); n != 1 {
		t.Errorf("%d created events from id 8, want 1", n)
	}
}

func TestParseUsecPerCall(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_get:calls=10,usec=25,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=4,usec=40,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n"
	got, err := parseUsecPerCall(info)
	if err != nil || len(got) != 2 || got["get"] != 2.5 || got["evalsha"] != 10 {
		t.Errorf("parseUsecPerCall = %v, %v; want get 2.5, evalsha 10, nothing else", got, err)
	}
	if _, err := parseUsecPerCall("cmdstat_get:calls=1,usec_per_call=x\r\n"); err == nil {
		t.Error("a usec_per_call that is not a number: no error")
	}
}

func TestScalePaths(t *testing.T) {
	data, png := scalePaths("/r/docs/performance.md")
	if data != "/r/docs/performance-scale.json" || png != "/r/docs/performance-scale.png" {
		t.Errorf("scalePaths = %s, %s", data, png)
	}
}
