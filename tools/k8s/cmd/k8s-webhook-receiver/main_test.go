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
		{"a delivery", http.MethodPost, "/hooks/plantstore", `{"type":"plant.created"}`, http.StatusNoContent},
		{"another", http.MethodPost, "/hooks/other", `{}`, http.StatusNoContent},
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
	if got := strings.TrimSpace(string(body)); got != `{"hooks":2}` {
		t.Errorf("stats %s, want the two deliveries counted (not the refused ones)", got)
	}
}
