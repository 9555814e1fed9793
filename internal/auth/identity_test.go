package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const k8sIssuer = "https://kubernetes.default.svc.cluster.local"

func TestParseIdentityLines(t *testing.T) {
	file := "apikey name=orders scopes=plants:read\n" +
		"subject=system:serviceaccount:shop:orders issuer=" + k8sIssuer + " name=orders scopes=plants:write rate=10/s burst=20\n" +
		"issuer=https://dex.example claim=groups:shop-admins name=admins # any admin\n" +
		"claim=azp:cli issuer=https://dex.example subject=alice name=alice scopes=plants:read\n" +
		// "subject=" alone is a token68: a 1.1.0 token line, as before.
		"subject= name=legacy\n"
	s, err := ParseTokens(strings.NewReader(file), parseNow)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 || s.Identities() != 3 || !s.Accepts("subject=") {
		t.Fatalf("%d tokens, %d identities; want 2 and 3, subject= a token", s.Len(), s.Identities())
	}
	if got := strings.Join(s.Names(), ","); got != "admins,alice,legacy,orders" {
		t.Errorf("Names() = %s", got)
	}
	if got := strings.Join(s.IdentityIssuers(), ","); got != "https://dex.example,"+k8sIssuer {
		t.Errorf("IdentityIssuers() = %s", got)
	}
	orders := s.Identify(&Identity{Issuer: k8sIssuer, Subject: "system:serviceaccount:shop:orders"})
	if orders == nil || orders.Name != "orders" || orders.Scopes != ScopeWrite || orders.Rate != (Rate{10, time.Second, 20}) {
		t.Fatalf("orders: %+v", orders)
	}
	// The same budget as the API key of the same name: one client.
	if key := s.Lookup("apikey"); orders.Key() != key.Key() {
		t.Errorf("identity key %q, API key %q: one client, one budget", orders.Key(), key.Key())
	}
	tests := []struct {
		name string
		id   Identity
		want string
	}{
		{"the subject of another issuer", Identity{Issuer: "https://dex.example", Subject: "system:serviceaccount:shop:orders"}, ""},
		{"another subject", Identity{Issuer: k8sIssuer, Subject: "system:serviceaccount:shop:billing"}, ""},
		{"a group among others", Identity{Issuer: "https://dex.example", Subject: "bob", Claims: map[string][]string{"groups": {"ops", "shop-admins"}}}, "admins"},
		{"a group of another issuer", Identity{Issuer: k8sIssuer, Subject: "bob", Claims: map[string][]string{"groups": {"shop-admins"}}}, ""},
		{"subject and claim both hold", Identity{Issuer: "https://dex.example", Subject: "alice", Claims: map[string][]string{"azp": {"cli"}}}, "alice"},
		{"subject without the claim", Identity{Issuer: "https://dex.example", Subject: "alice", Claims: map[string][]string{"azp": {"web"}}}, ""},
		{"no claims", Identity{Issuer: "https://dex.example", Subject: "carol"}, ""},
	}
	for _, tt := range tests {
		c := s.Identify(&tt.id)
		if got := ""; c != nil {
			got = c.Name
			if got != tt.want {
				t.Errorf("%s: client %q, want %q", tt.name, got, tt.want)
			}
		} else if tt.want != "" {
			t.Errorf("%s: no client, want %q", tt.name, tt.want)
		}
	}
}

func TestParseIdentityLineErrors(t *testing.T) {
	tests := []struct{ line, says string }{
		{"subject=x name=a", "needs issuer="},
		{"issuer=" + k8sIssuer + " name=a", "subject=, claim= or both"},
		{"subject=x issuer=" + k8sIssuer, "needs name="},
		{"subject=x issuer=http://insecure name=a", "https URL"},
		{"subject=x issuer=" + k8sIssuer + " name=a expires=2027-01-01T00:00:00Z", "expires= is for token lines"},
		{"claim=groups issuer=" + k8sIssuer + " name=a", "claim= must be"},
		{"claim=:x issuer=" + k8sIssuer + " name=a", "claim= must be"},
		{"claim=a/b:x issuer=" + k8sIssuer + " name=a", "claim= must be"},
		{"subject=x subject=y issuer=" + k8sIssuer + " name=a", "given twice"},
		{"subject=x issuer=" + k8sIssuer + " name=a owner=me", "unknown"},
		{"subject=x issuer=" + k8sIssuer + " name=a junk", "not key=value"},
		{"subject=x issuer=" + k8sIssuer + " name=unnamed", "name="},
		{"subject=x issuer=" + k8sIssuer + " name=a burst=3", "needs rate="},
		{"subject=x issuer=" + k8sIssuer + " name=a scopes=admin", "unknown scope"},
	}
	for _, tt := range tests {
		_, err := ParseTokens(strings.NewReader("tok\n"+tt.line+"\n"), parseNow)
		if err == nil || !strings.HasPrefix(err.Error(), "line 2: ") || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%q: %v, want line 2 saying %q", tt.line, err, tt.says)
		}
	}
	// An identity repeated with other attributes is refused, as a token is.
	_, err := ParseTokens(strings.NewReader("subject=x issuer="+k8sIssuer+" name=a\n\nissuer="+k8sIssuer+" subject=x name=b\n"), parseNow)
	if err == nil || !strings.Contains(err.Error(), "line 3: the identity of line 1 again") {
		t.Errorf("a repeated identity: %v", err)
	}
	// A file of identity lines only is a file with something in force.
	if _, err := ParseTokens(strings.NewReader("subject=x issuer="+k8sIssuer+" name=a\n"), parseNow); err != nil {
		t.Errorf("identity lines only: %v", err)
	}
}

// fakeJWT answers Verify from a table.
type fakeJWT map[string]struct {
	id  *Identity
	err error
}

func (f fakeJWT) Verify(_ context.Context, token string) (*Identity, error) {
	r, ok := f[token]
	if !ok {
		return nil, ErrNotJWT
	}
	return r.id, r.err
}

func (f fakeJWT) Issuers() []string { return []string{k8sIssuer} }

// TestJWTMiddleware: API keys first and unchanged; a verified identity with
// a client passes as that client, one without is 403 40302; a rejected JWT
// is 401 40102 with its message; an issuer unavailable 503 50302 with
// Retry-After.
func TestJWTMiddleware(t *testing.T) {
	set, err := ParseTokens(strings.NewReader("apikey name=orders\nsubject=sa issuer="+k8sIssuer+" name=orders scopes=plants:read\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keyring := NewKeyring(set)
	jwt := fakeJWT{
		"a.valid.jwt":    {id: &Identity{Issuer: k8sIssuer, Subject: "sa"}},
		"a.stranger.jwt": {id: &Identity{Issuer: k8sIssuer, Subject: "someone-else"}},
		"an.expired.jwt": {err: &TokenRejectedError{Message: "the token has expired", Expired: true}},
		"a.forged.jwt":   {err: &TokenRejectedError{Message: "the token's signature does not verify with its issuer's key"}},
		"a.cold.jwt":     {err: &IssuerUnavailableError{RetryAfter: 2500 * time.Millisecond, Err: errors.New("down")}},
		"a.weird.jwt":    {err: errors.New("unforeseen")},
	}
	var reasons []string
	var seen *Client
	h := JWTMiddleware(keyring, keyring, jwt, func(r string) { reasons = append(reasons, r) })(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = ClientFrom(r.Context()); w.WriteHeader(204) }))
	tests := []struct {
		token      string
		status     int
		code       int
		challenge  string
		message    string
		retryAfter string
		reason     string
		client     string
	}{
		{"apikey", 204, 0, "", "", "", "", "orders"},
		{"a.valid.jwt", 204, 0, "", "", "", "", "orders"},
		{"a.stranger.jwt", 403, 40302, `Bearer realm="plantstore", error="insufficient_scope"`, "no client is mapped", "", ReasonNoClient, ""},
		{"an.expired.jwt", 401, 40102, challengeInvalid, "the token has expired", "", ReasonExpired, ""},
		{"a.forged.jwt", 401, 40102, challengeInvalid, "signature does not verify", "", ReasonRejected, ""},
		{"a.cold.jwt", 503, 50302, "", "issuer cannot be reached", "3", ReasonIssuerUnavailable, ""},
		{"a.weird.jwt", 401, 40102, challengeInvalid, "the bearer token is not accepted", "", ReasonRejected, ""},
		{"unknown-key", 401, 40102, challengeInvalid, "the bearer token is not accepted", "", ReasonRejected, ""},
	}
	for _, tt := range tests {
		seen, reasons = nil, nil
		req := httptest.NewRequest(http.MethodGet, "/plants", nil)
		req.Header.Set("Authorization", "Bearer "+tt.token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.status {
			t.Errorf("%s: status %d, want %d", tt.token, rec.Code, tt.status)
			continue
		}
		if tt.code == 0 {
			if seen == nil || seen.Name != tt.client {
				t.Errorf("%s: client %+v, want %s", tt.token, seen, tt.client)
			}
			continue
		}
		var e struct {
			Error   int    `json:"error"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error != tt.code || !strings.Contains(e.Message, tt.message) {
			t.Errorf("%s: body %s, want %d saying %q", tt.token, rec.Body, tt.code, tt.message)
		}
		if got := rec.Header().Get("WWW-Authenticate"); got != tt.challenge {
			t.Errorf("%s: WWW-Authenticate %q, want %q", tt.token, got, tt.challenge)
		}
		if got := rec.Header().Get("Retry-After"); got != tt.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", tt.token, got, tt.retryAfter)
		}
		if len(reasons) != 1 || reasons[0] != tt.reason {
			t.Errorf("%s: reasons %v, want [%s]", tt.token, reasons, tt.reason)
		}
	}
}
