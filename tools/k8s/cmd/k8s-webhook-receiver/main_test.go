package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReceiver(t *testing.T) {
	srv := httptest.NewServer(new(receiver).handler())
	defer srv.Close()
	for _, tc := range []struct {
		name, method, path, body string
		want                     int
	}{
		{"a delivery", http.MethodPost, "/hooks/plantstore", `{"type":"plant.created","data":{"id":7,"name":"a"}}`, http.StatusNoContent},
		{"the same again (at least once)", http.MethodPost, "/hooks/plantstore", `{"type":"plant.created","data":{"id":7,"name":"a"}}`, http.StatusNoContent},
		{"a delete", http.MethodPost, "/hooks/plantstore", `{"type":"plant.deleted","data":{"id":8,"name":"b"}}`, http.StatusNoContent},
		{"not an event", http.MethodPost, "/hooks/other", `{}`, http.StatusNoContent},
		{"a body over 1 MiB", http.MethodPost, "/hooks/plantstore", strings.Repeat("x", 1<<20+1), http.StatusRequestEntityTooLarge},
		{"not under /hooks/", http.MethodPost, "/v1/traces", `{}`, http.StatusNotFound},
		{"a GET of a hook path", http.MethodGet, "/hooks/plantstore", "", http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, res.StatusCode, tc.want)
		}
	}
	res, err := http.Get(srv.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(body)); got != `{"created":1,"hooks":4}` {
		t.Errorf("stats %s, want the four deliveries counted (not the refused ones), one plant created", got)
	}
}

func TestMissing(t *testing.T) {
	srv := httptest.NewServer(new(receiver).handler())
	defer srv.Close()
	post := func(path, body string) (int, string) {
		t.Helper()
		res, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, strings.TrimSpace(string(b))
	}
	for _, e := range []string{
		`{"type":"plant.created","data":{"id":1,"name":"a"}}`,
		`{"type":"plant.deleted","data":{"id":2,"name":"b"}}`, // a delete announces no creation
		`{"type":"plant.created","data":{"name":"no id"}}`,
	} {
		post("/hooks/plantstore", e)
	}
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"one announced, two not", `[1, 2, 3]`, http.StatusOK, `[2,3]`},
		{"all announced", `[1]`, http.StatusOK, `[]`},
		{"none asked", `[]`, http.StatusOK, `[]`},
		{"not an array", `{"ids": [1]}`, http.StatusBadRequest, ""},
	} {
		code, got := post("/missing", tc.body)
		if code != tc.code || (tc.want != "" && got != tc.want) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, got, tc.code, tc.want)
		}
	}
}
