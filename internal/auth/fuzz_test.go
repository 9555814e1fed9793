package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// bearerSyntax is RFC 6750's credentials, written apart from middleware.go:
// the scheme in any case, one or more spaces, one token68.
var bearerSyntax = regexp.MustCompile(`^[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*)$`)

// FuzzAuthorization feeds arbitrary Authorization headers, one or two,
// through the middleware over a keyring of two tokens. It never panics; a
// request gets through exactly when it carries one header of the bearer
// syntax whose token is one of the two; every refusal is a 401 with the
// contract's code (40101 no header, 40103 not "Bearer <token68>" or two
// headers, 40102 a well-formed token not accepted), the matching challenge
// and an Error body that is the same for every request refused with that
// code, so nothing the client sent is ever echoed.
func FuzzAuthorization(f *testing.F) {
	const token = "s3cr3t-T0ken_value~with+chars/="
	const other = "0ther.T0ken=="
	for _, seed := range [][2]string{
		{"", ""}, {"Bearer " + token, ""}, {"bearer " + token, ""}, {"BEARER  " + token, ""}, {"Bearer " + other, ""},
		{"Bearer", ""}, {"Bearer ", ""}, {"Basic dXNlcjpwYXNz", ""}, {"Bearer " + token + " ", ""},
		{"Bearer " + token + "x", ""}, {"Bearer " + token[:len(token)-2], ""}, {"Bearer " + strings.ToUpper(token), ""},
		{"Bearer\t" + token, ""}, {"Bearer " + token + "\x00", ""}, {" Bearer " + token, ""},
		{"Bearer ==", ""}, {"Bearer a=b", ""}, {"Token " + token, ""}, {strings.Repeat("Bearer ", 50), ""},
		{"Bearer é", ""}, {"Bearer " + token, "Bearer " + token}, {"", "Bearer " + token}, {"Bearer " + token, "Bearer x"},
		{"Bearer " + token + "," + token, ""}, {"Bearer " + token + "\r\nX: y", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	passed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	handler := Middleware(NewKeyring(NewTokenSet(token, other)), nil)(passed)
	target, _ := url.Parse("/plants")
	bodies := map[string]string{} // the refusal body of each code, the same for every request
	f.Fuzz(func(t *testing.T, header, second string) {
		var values []string
		if header != "" || second != "" {
			values = append(values, header)
		}
		if second != "" {
			values = append(values, second)
		}
		req := &http.Request{Method: http.MethodPost, URL: target, Header: http.Header{}, Host: "plantstore"}
		if values != nil {
			req.Header["Authorization"] = values
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)

		code, challenge := 0, `Bearer realm="plantstore"`
		switch m := bearerSyntax.FindStringSubmatch(header); {
		case len(values) == 0:
			code = 40101
		case len(values) > 1 || m == nil:
			code = 40103
		case m[1] != token && m[1] != other:
			code, challenge = 40102, `Bearer realm="plantstore", error="invalid_token"`
		}

		if code == 0 {
			if rec.Code != http.StatusNoContent {
				t.Fatalf("%q: the right token was refused with %d %s", values, rec.Code, rec.Body)
			}
			return
		}
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("%q: status %d, want 401 %d", values, rec.Code, code)
		}
		if got := rec.Header().Values("WWW-Authenticate"); len(got) != 1 || got[0] != challenge {
			t.Fatalf("%q: WWW-Authenticate %q, want %q", values, got, challenge)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%q: Content-Type %q", values, ct)
		}
		var e struct {
			Error   int    `json:"error"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error != code || e.Message == "" {
			t.Fatalf("%q: body %s, want an Error with code %d", values, rec.Body, code)
		}
		key := challenge + " " + rec.Body.String()
		if first, ok := bodies[e.Message]; ok && first != key {
			t.Fatalf("%q: the refusal %s differs from an earlier one with the same message", values, rec.Body)
		}
		bodies[e.Message] = key
		if len(bodies) > 3 {
			t.Fatalf("%q: a fourth refusal body %s: a refusal depends on the request", values, rec.Body)
		}
	})
}
