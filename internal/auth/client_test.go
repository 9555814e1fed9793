package auth

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var parseNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func TestParseLineAttributes(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Client // key left out: checked apart
	}{
		{"token alone: the 1.0.0 meaning", "tok-A", Client{Name: Unnamed, Scopes: AllScopes}},
		{"digest alone", sha256Line("tok-A", false), Client{Name: Unnamed, Scopes: AllScopes}},
		{"name", "tok-A name=ci-bot", Client{Name: "ci-bot", Scopes: AllScopes}},
		{"read scope", "tok-A name=dash scopes=plants:read", Client{Name: "dash", Scopes: ScopeRead}},
		{"write scope", "tok-A scopes=plants:write", Client{Name: Unnamed, Scopes: ScopeWrite}},
		{"both scopes in either order", "tok-A scopes=plants:write,plants:read", Client{Name: Unnamed, Scopes: AllScopes}},
		{"expiry in UTC", "tok-A expires=2026-12-31T23:59:59Z", Client{Name: Unnamed, Scopes: AllScopes, Expires: time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC)}},
		{"expiry with an offset", "tok-A expires=2026-07-01T02:00:00+02:00", Client{Name: Unnamed, Scopes: AllScopes, Expires: time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)}},
		{"rate per second, burst the rate", "tok-A rate=10/s", Client{Name: Unnamed, Scopes: AllScopes, Rate: Rate{10, time.Second, 10}}},
		{"rate per minute with burst", "tok-A rate=600/m burst=20", Client{Name: Unnamed, Scopes: AllScopes, Rate: Rate{600, time.Minute, 20}}},
		{"rate per hour", "tok-A rate=1000000000/h", Client{Name: Unnamed, Scopes: AllScopes, Rate: Rate{1000000000, time.Hour, 1000000000}}},
		{"every attribute, tabs and a comment", "\t" + sha256Line("tok-A", true) + "\tname=A.b_c-9  scopes=plants:read rate=5/s burst=1 expires=2027-01-01T00:00:00Z # the reader",
			Client{Name: "A.b_c-9", Scopes: ScopeRead, Expires: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), Rate: Rate{5, time.Second, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, c, err := ParseLine(tt.line, parseNow)
			if err != nil {
				t.Fatalf("ParseLine: %v", err)
			}
			if d != sha256.Sum256([]byte("tok-A")) {
				t.Errorf("digest is not the token's")
			}
			key := c.Key()
			c.key = ""
			if c != tt.want {
				t.Errorf("client = %+v, want %+v", c, tt.want)
			}
			if c.Name == Unnamed && !strings.HasPrefix(key, "token:") || c.Name != Unnamed && key != "client:"+c.Name {
				t.Errorf("key %q for name %q", key, c.Name)
			}
			if strings.Contains(key, "tok-A") {
				t.Errorf("key %q holds the token", key)
			}
		})
	}
}

func TestParseLineErrors(t *testing.T) {
	const secret = "s3cr3t-value"
	tests := []struct {
		name, line, says string
	}{
		{"not key=value", secret + " junk", "not key=value"},
		{"empty value", secret + " name=", "not key=value"},
		{"unknown attribute", secret + " owner=me", "unknown"},
		{"attribute in upper case", secret + " NAME=x", "unknown"},
		{"duplicate attribute", secret + " name=a name=b", "name= given twice"},
		{"duplicate rate", secret + " rate=1/s rate=2/s", "rate= given twice"},
		{"name with a space-free bad character", secret + " name=a/b", "name="},
		{"name starting with a dot", secret + " name=.a", "name="},
		{"name too long", secret + " name=" + strings.Repeat("a", 65), "name="},
		{"reserved name unnamed", secret + " name=unnamed", "name="},
		{"reserved name unauthenticated", secret + " name=unauthenticated", "name="},
		{"unknown scope", secret + " scopes=plants:admin", "unknown scope"},
		{"scope in upper case", secret + " scopes=PLANTS:READ", "unknown scope"},
		{"empty scope in the list", secret + " scopes=plants:read,", "unknown scope"},
		{"duplicate scope", secret + " scopes=plants:read,plants:read", "twice"},
		{"expiry not RFC 3339", secret + " expires=2026-12-31", "RFC 3339"},
		{"expiry garbage", secret + " expires=tomorrow", "RFC 3339"},
		{"expiry in the past", secret + " expires=2026-01-01T00:00:00Z", "in the past"},
		{"expiry now", secret + " expires=2026-06-01T12:00:00Z", "in the past"},
		{"rate zero", secret + " rate=0/s", "rate="},
		{"rate negative", secret + " rate=-5/s", "rate="},
		{"rate with plus", secret + " rate=+5/s", "rate="},
		{"rate with leading zero", secret + " rate=05/s", "rate="},
		{"rate without unit", secret + " rate=5", "rate="},
		{"rate with unknown unit", secret + " rate=5/d", "rate="},
		{"rate with long unit", secret + " rate=5/sec", "rate="},
		{"rate garbage", secret + " rate=lots", "rate="},
		{"rate too large", secret + " rate=1000000001/s", "rate="},
		{"rate overflowing int", secret + " rate=99999999999999999999/s", "rate="},
		{"burst zero", secret + " rate=5/s burst=0", "burst="},
		{"burst negative", secret + " rate=5/s burst=-1", "burst="},
		{"burst garbage", secret + " rate=5/s burst=x", "burst="},
		{"burst without rate", secret + " burst=5", "needs rate="},
		{"bad token before good attributes", secret + "! name=a", "token may hold"},
		{"bad digest", "sha256:abc name=a", "64 hex digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseLine(tt.line, parseNow)
			if err == nil {
				t.Fatal("ParseLine succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q leaks the token", err)
			}
			// In a file, the error names the line and nothing is kept.
			s, err := ParseTokens(strings.NewReader("good name=ok\n# c\n"+tt.line+"\nlater\n"), parseNow)
			if err == nil || !strings.HasPrefix(err.Error(), "line 3: ") || s.Len() != 0 {
				t.Errorf("ParseTokens = %d tokens, %v; want none and an error naming line 3", s.Len(), err)
			}
		})
	}
}

func TestParseTokensRepeatedToken(t *testing.T) {
	if _, err := ParseTokens(strings.NewReader("same name=a\n"+sha256Line("same", false)+" name=a\n"), parseNow); err != nil {
		t.Errorf("a token repeated with the same attributes: %v", err)
	}
	_, err := ParseTokens(strings.NewReader("same name=a\n\n"+sha256Line("same", false)+" name=b\n"), parseNow)
	if err == nil || !strings.Contains(err.Error(), "line 3: the token of line 1 again") {
		t.Errorf("a token repeated with other attributes: %v, want an error naming lines 3 and 1", err)
	}
}

func TestTokenSetLookupAndNames(t *testing.T) {
	s, err := ParseTokens(strings.NewReader("r1 name=reader scopes=plants:read\nr2 name=reader scopes=plants:read\nw name=writer\nu1\nu2\n"), parseNow)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Names(), ","); got != "reader,unnamed,writer" {
		t.Errorf("Names() = %s", got)
	}
	r1, r2, w, u1, u2 := s.Lookup("r1"), s.Lookup("r2"), s.Lookup("w"), s.Lookup("u1"), s.Lookup("u2")
	if r1 == nil || r2 == nil || w == nil || u1 == nil || u2 == nil || s.Lookup("nope") != nil {
		t.Fatal("Lookup misses a token or finds one not in the set")
	}
	if r1.Name != "reader" || r1.Scopes != ScopeRead || w.Name != "writer" || w.Scopes != AllScopes {
		t.Errorf("clients: %+v %+v", r1, w)
	}
	// One budget per client name; unnamed tokens each have their own.
	if r1.Key() != r2.Key() || r1.Key() == w.Key() || u1.Key() == u2.Key() || u1.Name != Unnamed {
		t.Errorf("keys: r1 %s r2 %s w %s u1 %s u2 %s", r1.Key(), r2.Key(), w.Key(), u1.Key(), u2.Key())
	}
}

func TestScopeString(t *testing.T) {
	for s, want := range map[Scope]string{ScopeRead: "plants:read", ScopeWrite: "plants:write", AllScopes: "plants:read,plants:write"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}

// TestScopesAndExpiry runs the contract's section 10 answers through
// Middleware and Require: the right scope passes with the client in the
// context, a missing scope is a 403 insufficient_scope naming the scope, an
// expired token a 401 invalid_token.
func TestScopesAndExpiry(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	set, err := ParseTokens(strings.NewReader(
		"reader name=reader scopes=plants:read\n"+
			"writer name=writer scopes=plants:write\n"+
			"both name=both\n"+
			"soon name=soon expires="+future+"\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A client whose expiry has passed since the file was read.
	expired := NewClientTokenSet("tok-old", Client{Name: "old", Scopes: AllScopes, Expires: time.Now().Add(-time.Second)})
	keyring := NewKeyring(set.Union(expired))
	var reasons []string
	observe := func(r string) { reasons = append(reasons, r) }
	var seen *Client
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = ClientFrom(r.Context())
		w.WriteHeader(http.StatusNoContent)
	})
	tests := []struct {
		token     string
		scope     Scope
		status    int
		code      int
		challenge string
		client    string
	}{
		{"reader", ScopeRead, 204, 0, "", "reader"},
		{"reader", ScopeWrite, 403, 40301, `Bearer realm="plantstore", error="insufficient_scope", scope="plants:write"`, ""},
		{"writer", ScopeWrite, 204, 0, "", "writer"},
		{"writer", ScopeRead, 403, 40301, `Bearer realm="plantstore", error="insufficient_scope", scope="plants:read"`, ""},
		{"both", ScopeRead, 204, 0, "", "both"},
		{"both", ScopeWrite, 204, 0, "", "both"},
		{"soon", ScopeWrite, 204, 0, "", "soon"},
		{"tok-old", ScopeRead, 401, 40102, `Bearer realm="plantstore", error="invalid_token"`, ""},
		{"unknown", ScopeRead, 401, 40102, `Bearer realm="plantstore", error="invalid_token"`, ""},
	}
	for _, tt := range tests {
		seen, reasons = nil, nil
		h := Middleware(keyring, observe)(Require(tt.scope, observe)(ok))
		req := httptest.NewRequest(http.MethodGet, "/plants", nil)
		req.Header.Set("Authorization", "Bearer "+tt.token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		name := tt.token + " needing " + tt.scope.String()
		if rec.Code != tt.status {
			t.Errorf("%s: status %d, want %d", name, rec.Code, tt.status)
			continue
		}
		if tt.code == 0 {
			if seen == nil || seen.Name != tt.client {
				t.Errorf("%s: the handler saw client %+v, want %s", name, seen, tt.client)
			}
			continue
		}
		if got := rec.Header().Values("WWW-Authenticate"); len(got) != 1 || got[0] != tt.challenge {
			t.Errorf("%s: WWW-Authenticate %q, want %q", name, got, tt.challenge)
		}
		var e struct {
			Error   int    `json:"error"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error != tt.code || e.Message == "" || strings.Contains(e.Message, tt.token) {
			t.Errorf("%s: body %s, want an Error with code %d", name, rec.Body, tt.code)
		}
		want := map[int]string{40301: ReasonScope, 40102: ReasonRejected}[tt.code]
		if tt.token == "tok-old" {
			want = ReasonExpired
		}
		if len(reasons) != 1 || reasons[0] != want {
			t.Errorf("%s: reasons %v, want [%s]", name, reasons, want)
		}
	}
}

func TestParseRate(t *testing.T) {
	r, err := ParseRate("120/m")
	if err != nil || r != (Rate{120, time.Minute, 120}) {
		t.Errorf("ParseRate(120/m) = %+v, %v", r, err)
	}
	for _, bad := range []string{"", "/s", "1/", "0/s", "1/ms", "1.5/s", " 1/s", "1/s ", "1//s"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) succeeded", bad)
		}
	}
}

// FuzzParseLine feeds arbitrary lines to the tokens-file line parser. It
// never panics; an error never quotes the token; a line it accepts is one
// the service can use (a known name, scopes among the two, a rate in
// bounds, an expiry after now) and parses again to the same client with
// its attributes in another order.
func FuzzParseLine(f *testing.F) {
	for _, seed := range []string{
		"tok", "tok name=a", "tok name=a scopes=plants:read expires=2027-01-01T00:00:00Z rate=10/s burst=5",
		sha256Line("tok", false) + " rate=1/h", "tok # c", "# only", "", "tok name=a name=b", "tok burst=3",
		"tok scopes=plants:read,plants:write", "tok rate=0/s", "tok expires=2020-01-01T00:00:00Z", "tok =x", "tok x=",
		"tok\tname=a\tscopes=plants:write", "tok rate=1000000000/s burst=1000000000", "tok name=é",
	} {
		f.Add(seed)
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, line string) {
		d, c, err := ParseLine(line, now)
		if err != nil {
			if errors.Is(err, errBlank) {
				return
			}
			// The error depends on the token only through its validity: it
			// is the same with any other valid token in its place, or one of
			// two fixed messages, so it can never quote the token.
			fields := strings.Fields(strings.SplitN(line, "#", 2)[0])
			if _, terr := parseToken(fields[0]); terr != nil {
				if err != terr && err.Error() != terr.Error() {
					t.Fatalf("%q: error %q, want the token's own %q", line, err, terr)
				}
				return
			}
			fields[0] = "other-token"
			if _, _, err2 := ParseLine(strings.Join(fields, " "), now); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("%q: error %q changes to %v with another token", line, err, err2)
			}
			return
		}
		if !validName(c.Name) || c.Scopes == 0 || c.Scopes&^AllScopes != 0 {
			t.Fatalf("%q: accepted a client the service cannot use: %+v", line, c)
		}
		if !c.Expires.IsZero() && !c.Expires.After(now) {
			t.Fatalf("%q: accepted an expiry not after now: %v", line, c.Expires)
		}
		if !c.Rate.IsZero() && (c.Rate.Count < 1 || c.Rate.Count > maxCount || c.Rate.Burst < 1 || c.Rate.Burst > maxCount) {
			t.Fatalf("%q: accepted a rate out of bounds: %+v", line, c.Rate)
		}
		// The attributes in reverse order parse to the same client.
		fields := strings.Fields(strings.SplitN(line, "#", 2)[0])
		rev := []string{fields[0]}
		for i := len(fields) - 1; i > 0; i-- {
			rev = append(rev, fields[i])
		}
		d2, c2, err := ParseLine(strings.Join(rev, " "), now)
		if err != nil || d2 != d || c2 != c {
			t.Fatalf("%q reordered: %+v %v, want %+v", line, c2, err, c)
		}
	})
}
