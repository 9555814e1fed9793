package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/redistest"
)

// TestClientsScopesAndLimits runs section 10 of the contract through two
// service processes sharing one Redis: the read-only client reads and gets
// 403 40301 on writes; the limited client's budget (burst 3 an hour) is
// shared by both processes, so its fourth request, on whichever, is 429
// 42901 with Retry-After and the RateLimit fields; an unlimited client on
// the same processes answers as in 1.0.0, without RateLimit fields.
func TestClientsScopesAndLimits(t *testing.T) {
	redis := redistest.Start(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(
		"reader-token name=reader scopes=plants:read\n"+
			"limited-token name=limited rate=1/h burst=3\n"+
			"plain-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := options{RedisAddr: redis.Addr, NoTokens: true, Extra: []string{"--auth-tokens-file", tokens}}
	a, b := startService(t, opts), startService(t, opts)
	as := func(s *service, token string) *service { c := *s; c.Token = token; return &c }

	// Scopes.
	if r := as(a, "plain-token").Post(t, `{"id": 1, "name": "Monstera"}`); r.Status != 200 || len(r.Header.Values("RateLimit")) != 0 {
		t.Fatalf("plain create: %d %v %s", r.Status, r.Header, r.Body)
	}
	if r := as(a, "reader-token").Do(t, http.MethodGet, "/plants/1", "", nil); r.Status != 200 {
		t.Errorf("reader GET: %d %s", r.Status, r.Body)
	}
	for _, req := range []struct{ method, path, body string }{{http.MethodPost, "/plants", `{"id": 2, "name": "x"}`}, {http.MethodDelete, "/plants/1", ""}} {
		r := as(b, "reader-token").Do(t, req.method, req.path, req.body, nil)
		if r.Status != 403 || r.ErrorCode(t) != 40301 ||
			r.Header.Get("WWW-Authenticate") != `Bearer realm="plantstore", error="insufficient_scope", scope="plants:write"` {
			t.Errorf("reader %s: %d %q %s", req.method, r.Status, r.Header.Get("WWW-Authenticate"), r.Body)
		}
	}

	// One budget across both processes: 3 admitted, then 429 on either.
	for i, s := range []*service{a, b, a} {
		r := as(s, "limited-token").Do(t, http.MethodGet, "/plants", "", nil)
		wantLimit := []string{`"client";r=2;t=`, `"client";r=1;t=`, `"client";r=0;t=`}[i]
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("RateLimit"), wantLimit) || r.Header.Get("RateLimit-Policy") != `"client";q=1;w=3600` {
			t.Errorf("limited request %d: %d RateLimit %q Policy %q", i+1, r.Status, r.Header.Get("RateLimit"), r.Header.Get("RateLimit-Policy"))
		}
	}
	r := as(b, "limited-token").Do(t, http.MethodGet, "/plants", "", nil)
	if r.Status != 429 || r.ErrorCode(t) != 42901 || r.Header.Get("Retry-After") == "" ||
		!strings.HasPrefix(r.Header.Get("RateLimit"), `"client";r=0;t=`) {
		t.Errorf("limited request 4: %d Retry-After %q RateLimit %q %s", r.Status, r.Header.Get("Retry-After"), r.Header.Get("RateLimit"), r.Body)
	}
	if r := as(b, "plain-token").Do(t, http.MethodGet, "/plants", "", nil); r.Status != 200 || r.Header.Get("RateLimit") != "" {
		t.Errorf("plain client after the limited one: %d RateLimit %q", r.Status, r.Header.Get("RateLimit"))
	}

	// The access log names the client, never the token.
	logs := a.Logs.String() + b.Logs.String()
	for _, name := range []string{`"client":"reader"`, `"client":"limited"`, `"client":"unnamed"`} {
		if !strings.Contains(logs, name) {
			t.Errorf("no access line with %s", name)
		}
	}
	for _, token := range []string{"reader-token", "limited-token", "plain-token"} {
		if strings.Contains(logs, token) {
			t.Errorf("the logs hold the token %s", token)
		}
	}
}
