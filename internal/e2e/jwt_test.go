package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/plantstore/plantstore/internal/oidcauth/oidcauthtest"
	"github.com/plantstore/plantstore/internal/servicetest"
)

const jwtAudience = "plantstore"

// jwtService starts the service trusting issuers, with tokens as its
// tokens file.
func jwtService(t *testing.T, tokens string, issuers []*oidcauthtest.Issuer, extra ...string) *service {
	t.Helper()
	dir := t.TempDir()
	tokensFile, issuersFile := filepath.Join(dir, "tokens"), filepath.Join(dir, "issuers")
	var lines []string
	for _, iss := range issuers {
		lines = append(lines, iss.URL+" audience="+jwtAudience+" ca-file="+iss.CAFile)
	}
	if err := os.WriteFile(tokensFile, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(issuersFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return startService(t, options{NoTokens: true, Extra: append([]string{"--auth-tokens-file", tokensFile,
		"--auth-jwt-issuers-file", issuersFile, "--auth-jwt-refresh-min-interval", "1s", "--auth-jwt-timeout", "500ms"}, extra...)})
}

// bearer sends method path with token.
func bearer(t *testing.T, s *service, method, path, body, token string) reply {
	t.Helper()
	return s.Do(t, method, path, body, map[string]string{"Authorization": "Bearer " + token})
}

// wantError checks an Error answer: status, code, a message saying says,
// the challenge (none when empty) and the Retry-After presence.
func wantError(t *testing.T, what string, r reply, status int, code int32, says, challenge string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: status %d %s, want %d", what, r.Status, r.Body, status)
	}
	var e struct {
		Error   int32  `json:"error"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Error != code || !strings.Contains(e.Message, says) {
		t.Fatalf("%s: body %s, want %d saying %q", what, r.Body, code, says)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	if got := r.Header.Get("WWW-Authenticate"); got != challenge {
		t.Errorf("%s: WWW-Authenticate %q, want %q", what, got, challenge)
	}
}

const (
	invalidToken = `Bearer realm="plantstore", error="invalid_token"`
	orders       = "system:serviceaccount:shop:orders"
)

// TestJWTCallers is contract section 12's JWT bearer credentials through
// the real service, against a local issuer: mapped identities are clients
// with their scopes, rate limits and names in metrics and logs; every
// failed check is a 401 saying which; an unmapped identity a 403 40302;
// the API keys answer as in 1.1.0; the issuer's keys rotate under it and
// it goes down, and what was verified keeps working.
func TestJWTCallers(t *testing.T) {
	iss := oidcauthtest.Start(t)
	tokens := "# API keys and identities, one client model\n" +
		"api-key-orders name=orders scopes=plants:read,plants:write\n" +
		"subject=" + orders + " issuer=" + iss.URL + " name=orders scopes=plants:write\n" +
		"issuer=" + iss.URL + " claim=groups:shop-admins name=admins\n" +
		"issuer=" + iss.URL + " subject=system:serviceaccount:shop:batch name=batch rate=1/m\n"
	s := jwtService(t, tokens, []*oidcauthtest.Issuer{iss})
	claims := func(sub string) map[string]any { return iss.Claims(sub, jwtAudience) }
	ordersToken := iss.Sign(t, claims(orders))
	plant := func(id int) string { return fmt.Sprintf(`{"id": %d, "name": "Monstera"}`, id) }

	// The API key answers as before; an unknown opaque token too.
	if r := bearer(t, s, "POST", "/plants", plant(1), "api-key-orders"); r.Status != 200 {
		t.Fatalf("API key: %d %s", r.Status, r.Body)
	}
	r := bearer(t, s, "GET", "/plants/1", "", "not-a-key")
	wantError(t, "unknown API key", r, 401, 40102, "the bearer token is not accepted", invalidToken)
	if string(r.Body) != `{"error":40102,"message":"the bearer token is not accepted"}`+"\n" {
		t.Errorf("unknown API key: body %q changed from 1.1.0's", r.Body)
	}

	// Mapped identities are clients, with their scopes.
	if r := bearer(t, s, "POST", "/plants", plant(2), ordersToken); r.Status != 200 {
		t.Fatalf("service account orders: %d %s", r.Status, r.Body)
	}
	wantError(t, "orders reading without plants:read", bearer(t, s, "GET", "/plants/2", "", ordersToken), 403, 40301, "plants:read",
		`Bearer realm="plantstore", error="insufficient_scope", scope="plants:read"`)
	admin := claims("alice")
	admin["groups"] = []string{"ops", "shop-admins"}
	if r := bearer(t, s, "GET", "/plants/2", "", iss.Sign(t, admin)); r.Status != 200 {
		t.Fatalf("a shop-admins member: %d %s", r.Status, r.Body)
	}
	wantError(t, "an identity no line maps", bearer(t, s, "GET", "/plants/2", "", iss.Sign(t, claims("system:serviceaccount:shop:billing"))),
		403, 40302, "no client is mapped", `Bearer realm="plantstore", error="insufficient_scope"`)

	// The rate limit of an identity line, as for an API key.
	batch := iss.Sign(t, claims("system:serviceaccount:shop:batch"))
	if r := bearer(t, s, "GET", "/plants/2", "", batch); r.Status != 200 {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	r = bearer(t, s, "GET", "/plants/2", "", batch)
	wantError(t, "batch over its rate", r, 429, 42901, "rate limit", "")
	if r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}

	// Every check that fails is a 401 saying which.
	now := time.Now()
	with := func(change func(map[string]any)) map[string]any {
		c := claims(orders)
		change(c)
		return c
	}
	hmacPEM, hmacDER := iss.SignHMACWithPublicKey(t, claims(orders))
	fetches := iss.KeySetFetches()
	for _, tc := range []struct{ what, token, says string }{
		{"expired", iss.Sign(t, with(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() })), "the token has expired"},
		{"another audience", iss.Sign(t, with(func(c map[string]any) { c["aud"] = "kubernetes" })), "audience (aud) is not plantstore's"},
		{"not yet valid", iss.Sign(t, with(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() })), "not valid yet"},
		{"issued in the future", iss.Sign(t, with(func(c map[string]any) { c["iat"] = now.Add(time.Hour).Unix() })), "issued in the future"},
		{"an issuer not trusted", iss.Sign(t, with(func(c map[string]any) { c["iss"] = "https://evil.example" })), "issuer (iss) is not one plantstore trusts"},
		{"alg none", iss.Unsigned(t, claims(orders)), "signing algorithm is not accepted"},
		{"HMAC, the public key (PEM) as secret", hmacPEM, "signing algorithm is not accepted"},
		{"HMAC, the public key (DER) as secret", hmacDER, "signing algorithm is not accepted"},
		{"signature of another payload", strings.Join([]string{strings.Split(ordersToken, ".")[0], strings.Split(batch, ".")[1], strings.Split(ordersToken, ".")[2]}, "."), "signature does not verify"},
		{"a kid not in the key set", iss.SignUnpublished(t, claims(orders)), "signing key (kid) is not in its issuer's key set"},
		{"17 KiB", "e30." + strings.Repeat("A", 17<<10) + ".sig", "longer than"},
	} {
		r := bearer(t, s, "GET", "/plants/2", "", tc.token)
		wantError(t, tc.what, r, 401, 40102, tc.says, invalidToken)
		if strings.Contains(string(r.Body), orders) || strings.Contains(string(r.Body), iss.URL) {
			t.Errorf("%s: the message %s quotes a claim", tc.what, r.Body)
		}
	}
	if n := iss.KeySetFetches() - fetches; n > 1 {
		t.Errorf("%d key set fetches for the failed checks, want at most 1 (the unknown kid's)", n)
	}

	// A 1 MB token: the server's header limit answers first, as in 1.1.0.
	if r := bearer(t, s, "GET", "/plants/2", "", "e30."+strings.Repeat("A", 1<<20)+".sig"); r.Status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 1 MB token: %d %s, want net/http's 431", r.Status, r.Body)
	}

	// The keys rotate to ECDSA, the old key kept: the old tokens keep
	// working, and a new one verifies once the keys are fetched again.
	iss.Rotate(t, jose.ES256, true)
	fresh := iss.Sign(t, claims(orders))
	if !servicetest.Eventually(10*time.Second, 200*time.Millisecond, func() bool {
		return bearer(t, s, "POST", "/plants", plant(3), fresh).Status == 200
	}) {
		t.Fatal("a token of the new key was not accepted after the refresh")
	}
	for _, tok := range []string{ordersToken, iss.Sign(t, claims(orders))} {
		if r := bearer(t, s, "POST", "/plants", plant(3), tok); r.Status != 200 {
			t.Fatalf("after the rotation: %d %s", r.Status, r.Body)
		}
	}

	// The issuer goes down: what was verified, and the cached keys, serve.
	iss.SetDown(true)
	for _, tok := range []string{ordersToken, fresh, iss.Sign(t, claims(orders))} {
		if r := bearer(t, s, "POST", "/plants", plant(3), tok); r.Status != 200 {
			t.Fatalf("the issuer down: %d %s", r.Status, r.Body)
		}
	}
	iss.SetDown(false)

	// Names, never claims or tokens, in metrics and logs.
	_, text := s.Metrics(t)
	if !strings.Contains(text, `client="orders"`) || !strings.Contains(text, `client="admins"`) {
		t.Errorf("no request series of the JWT clients orders and admins in the metrics")
	}
	// (The issuer's URL is a label: it is configuration, not a claim.)
	for _, leak := range []string{orders, "shop-admins", "alice", strings.Split(ordersToken, ".")[2]} {
		if strings.Contains(text, leak) {
			t.Errorf("the metrics hold %q", leak)
		}
	}
	if !strings.Contains(text, `plantstore_auth_jwt_verifications_total{result="cached"}`) {
		t.Error("no cached verifications counted")
	}
	logs := s.Logs.String()
	if !strings.Contains(logs, `"client":"orders"`) || !strings.Contains(logs, `"client":"admins"`) {
		t.Error("the access log does not name the JWT clients")
	}
	for _, leak := range []string{ordersToken, strings.Split(ordersToken, ".")[2], strings.Split(fresh, ".")[1], orders, "shop-admins"} {
		if strings.Contains(logs, leak) {
			t.Errorf("the logs hold %q", leak[:min(len(leak), 40)])
		}
	}
}

// TestJWTIssuerUnreachable: with no keys cached, an issuer that is down
// (from the start) or whose key set hangs makes its tokens 503 50302 with
// Retry-After, never 401, while the API keys work; once the issuer is
// back, its tokens are accepted.
func TestJWTIssuerUnreachable(t *testing.T) {
	down, hung := oidcauthtest.Start(t), oidcauthtest.Start(t)
	down.SetDown(true)
	hung.SetHang(true)
	tokens := "api-key name=keys\n" +
		"issuer=" + down.URL + " subject=sa name=down-client\n" +
		"issuer=" + hung.URL + " subject=sa name=hung-client\n"
	s := jwtService(t, tokens, []*oidcauthtest.Issuer{down, hung})
	for _, iss := range []*oidcauthtest.Issuer{down, hung} {
		r := bearer(t, s, "GET", "/plants", "", iss.Sign(t, iss.Claims("sa", jwtAudience)))
		wantError(t, "issuer "+iss.URL, r, 503, 50302, "issuer cannot be reached", "")
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("Retry-After %q, want whole seconds, at least 1", r.Header.Get("Retry-After"))
		}
	}
	if r := bearer(t, s, "GET", "/plants", "", "api-key"); r.Status != 200 {
		t.Fatalf("the API key with the issuers down: %d %s", r.Status, r.Body)
	}
	down.SetDown(false)
	token := down.Sign(t, down.Claims("sa", jwtAudience))
	if !servicetest.Eventually(10*time.Second, 200*time.Millisecond, func() bool {
		return bearer(t, s, "GET", "/plants", "", token).Status == 200
	}) {
		t.Fatal("the issuer came back and its token is still refused")
	}
	if !strings.Contains(s.Logs.String(), "none are cached") {
		t.Error("no log line said the issuer's keys could not be fetched")
	}
}
