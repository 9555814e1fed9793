package auth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

const (
	wantChallenge        = `Bearer realm="plantstore"`
	wantChallengeInvalid = `Bearer realm="plantstore", error="invalid_token"`
	goodToken            = "good-token_0123456789.~+/Zz"
	paddedToken          = "cGFkZGVkLXRva2Vu=="
)

// reasons records what a FailureObserver is told.
type reasons struct {
	mu  sync.Mutex
	got []string
}

func (r *reasons) observe(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, reason)
}

func (r *reasons) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// guarded returns a handler behind the middleware over a keyring accepting
// goodToken, with a counter of the requests that got through.
func guarded(t *testing.T) (http.Handler, *int, *reasons) {
	t.Helper()
	calls := new(int)
	obs := &reasons{}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*calls++
		w.WriteHeader(http.StatusNoContent)
	})
	k := NewKeyring(NewTokenSet(goodToken, paddedToken))
	return Middleware(k, obs.observe)(next), calls, obs
}

type errorBody struct {
	Error   *int32  `json:"error"`
	Message *string `json:"message"`
}

func serve(h http.Handler, authorization ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(`{"id":1,"name":"x"}`))
	for _, a := range authorization {
		req.Header.Add("Authorization", a)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// checkRefusal asserts a 401 with the challenge, a JSON Error body with the
// code, and that nothing presented by the client comes back.
func checkRefusal(t *testing.T, rec *httptest.ResponseRecorder, code int32, challenge string, secrets ...string) {
	t.Helper()
	res := rec.Result()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("status = %d, want 401", res.StatusCode)
	}
	if got := res.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != challenge {
		t.Errorf("WWW-Authenticate = %q, want exactly [%q]", got, challenge)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	raw, _ := io.ReadAll(res.Body)
	var body errorBody
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("body %q is not an Error body: %v", raw, err)
	}
	if body.Error == nil {
		t.Errorf("body %s: error field missing", raw)
	} else if *body.Error != code {
		t.Errorf("body %s: error = %d, want %d", raw, *body.Error, code)
	}
	if body.Message == nil || strings.TrimSpace(*body.Message) == "" {
		t.Errorf("body %s: message missing or empty", raw)
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		if strings.Contains(string(raw), s) {
			t.Errorf("body %s contains the presented credential %q", raw, s)
		}
		for k, vs := range res.Header {
			for _, v := range vs {
				if strings.Contains(v, s) {
					t.Errorf("header %s: %q contains the presented credential %q", k, v, s)
				}
			}
		}
	}
}

func TestMiddlewareMissing(t *testing.T) {
	h, calls, obs := guarded(t)
	rec := serve(h)
	checkRefusal(t, rec, 40101, wantChallenge)
	if *calls != 0 {
		t.Errorf("next handler called %d times, want 0", *calls)
	}
	if got := obs.list(); len(got) != 1 || got[0] != ReasonMissing {
		t.Errorf("observer saw %q, want [%q]", got, ReasonMissing)
	}
}

func TestMiddlewareMalformed(t *testing.T) {
	tests := []struct {
		name    string
		headers []string
		secret  string // text that must not come back
	}{
		{"empty header", []string{""}, ""},
		{"scheme only", []string{"Bearer"}, ""},
		{"scheme and space", []string{"Bearer "}, ""},
		{"scheme and spaces", []string{"Bearer    "}, ""},
		{"basic scheme", []string{"Basic abc"}, "abc"},
		{"basic with a good token", []string{"Basic " + goodToken}, goodToken},
		{"two tokens", []string{"Bearer a b"}, ""},
		{"token and trailing garbage", []string{"Bearer " + goodToken + " x"}, goodToken},
		{"other scheme", []string{"Token x-secret-x"}, "x-secret-x"},
		{"scheme glued to token", []string{"Bearer" + goodToken}, goodToken},
		{"tab separator", []string{"Bearer\t" + goodToken}, goodToken},
		{"prefix of the scheme", []string{"Bear " + goodToken}, goodToken},
		{"scheme with a suffix", []string{"Bearerx " + goodToken}, goodToken},
		{"two headers", []string{"Bearer " + goodToken, "Bearer " + goodToken}, goodToken},
		{"two headers, one empty", []string{"Bearer " + goodToken, ""}, goodToken},
		{"comma in the token", []string{"Bearer abc,def-secret"}, "def-secret"},
		{"quote in the token", []string{`Bearer "quoted-secret"`}, "quoted-secret"},
		{"equals inside the token", []string{"Bearer abc=def-secret"}, "def-secret"},
		{"padding only", []string{"Bearer =="}, ""},
		{"non-ASCII token", []string{"Bearer tökén-secret"}, "tökén-secret"},
		{"control character", []string{"Bearer abc\x01secret"}, "secret"},
		{"auth-param form", []string{`Bearer token="secret-param"`}, "secret-param"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, calls, obs := guarded(t)
			rec := serve(h, tt.headers...)
			checkRefusal(t, rec, 40103, wantChallenge, tt.secret)
			if *calls != 0 {
				t.Errorf("next handler called %d times, want 0", *calls)
			}
			if got := obs.list(); len(got) != 1 || got[0] != ReasonMalformed {
				t.Errorf("observer saw %q, want [%q]", got, ReasonMalformed)
			}
		})
	}
}

func TestMiddlewareAccepts(t *testing.T) {
	for _, header := range []string{
		"Bearer " + goodToken,
		"bearer " + goodToken,
		"BEARER " + goodToken,
		"BeArEr " + goodToken,
		"Bearer  " + goodToken, // 1*SP (RFC 7235)
		"Bearer " + paddedToken,
		"bearer " + paddedToken,
	} {
		t.Run(header, func(t *testing.T) {
			h, calls, obs := guarded(t)
			rec := serve(h, header)
			if rec.Code != http.StatusNoContent {
				t.Errorf("status = %d, want 204 from the next handler", rec.Code)
			}
			if *calls != 1 {
				t.Errorf("next handler called %d times, want 1", *calls)
			}
			if v := rec.Header().Get("WWW-Authenticate"); v != "" {
				t.Errorf("WWW-Authenticate = %q on success, want none", v)
			}
			if got := obs.list(); len(got) != 0 {
				t.Errorf("observer saw %q on success, want nothing", got)
			}
		})
	}
}

func TestMiddlewareRejected(t *testing.T) {
	for _, token := range []string{
		"unknown-token-value",
		goodToken[:len(goodToken)-3], // a prefix
		goodToken + "x",
		strings.ToUpper(goodToken),
		"QQQ",
		paddedToken[:len(paddedToken)-1], // one padding character short
		paddedToken + "=",
		strings.TrimRight(paddedToken, "="),
	} {
		t.Run(token, func(t *testing.T) {
			h, calls, obs := guarded(t)
			rec := serve(h, "Bearer "+token)
			checkRefusal(t, rec, 40102, wantChallengeInvalid, token)
			if *calls != 0 {
				t.Errorf("next handler called %d times, want 0", *calls)
			}
			if got := obs.list(); len(got) != 1 || got[0] != ReasonRejected {
				t.Errorf("observer saw %q, want [%q]", got, ReasonRejected)
			}
		})
	}
}

func TestMiddlewareFollowsKeyring(t *testing.T) {
	k := NewKeyring(NewTokenSet("first"))
	h := Middleware(k, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	if rec := serve(h, "Bearer first"); rec.Code != http.StatusNoContent {
		t.Fatalf("first token: status %d, want 204", rec.Code)
	}
	k.Replace(NewTokenSet("second"))
	if rec := serve(h, "Bearer first"); rec.Code != http.StatusUnauthorized {
		t.Errorf("rotated-out token: status %d, want 401", rec.Code)
	}
	if rec := serve(h, "Bearer second"); rec.Code != http.StatusNoContent {
		t.Errorf("new token: status %d, want 204", rec.Code)
	}
}

func TestMiddlewareNilObserver(t *testing.T) {
	// A nil FailureObserver must not panic on any failure path.
	h := Middleware(NewKeyring(NewTokenSet(goodToken)), nil)(http.NotFoundHandler())
	for _, hdr := range [][]string{nil, {"Basic x"}, {"Bearer wrong"}} {
		if rec := serve(h, hdr...); rec.Code != http.StatusUnauthorized {
			t.Errorf("headers %q: status %d, want 401", hdr, rec.Code)
		}
	}
}

func TestMiddlewareOverHTTP(t *testing.T) {
	// Through a real server: the header survives the wire, and the challenge
	// reaches the client.
	h, _, obs := guarded(t)
	srv := httptest.NewServer(h)
	defer srv.Close()

	do := func(headers ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/plants", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range headers {
			req.Header.Add("Authorization", v)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	if res := do("bEaReR " + goodToken); res.StatusCode != http.StatusNoContent {
		t.Errorf("valid token: status %d, want 204", res.StatusCode)
	}
	res := do()
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != wantChallenge {
		t.Errorf("missing: %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	res = do("Bearer "+goodToken, "Bearer "+goodToken)
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != wantChallenge {
		t.Errorf("two headers: %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	res = do("Bearer nope")
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != wantChallengeInvalid {
		t.Errorf("rejected: %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	want := []string{ReasonMissing, ReasonMalformed, ReasonRejected}
	if got := obs.list(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("observer saw %q, want %q", got, want)
	}
}
