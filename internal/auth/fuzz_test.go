package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzAuthorization feeds arbitrary Authorization headers through the
// middleware: it never panics, lets a request through only with the exact
// token, and every refusal is a 401 that does not echo the header.
func FuzzAuthorization(f *testing.F) {
	const token = "s3cr3t-T0ken_value~with+chars/="
	for _, seed := range []string{
		"", "Bearer " + token, "bearer " + token, "BEARER  " + token, "Bearer", "Bearer ", "Basic dXNlcjpwYXNz",
		"Bearer " + token + " ", "Bearer " + token + "x", "Bearer\t" + token, "Bearer " + token + "\x00",
		"Bearer ==", "Bearer a=b", "Token " + token, strings.Repeat("Bearer ", 50), "Bearer é",
	} {
		f.Add(seed)
	}
	passed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	handler := Middleware(NewKeyring(NewTokenSet(token)), nil)(passed)
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodPost, "/plants", nil)
		if header != "" {
			req.Header["Authorization"] = []string{header}
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		scheme, rest, _ := strings.Cut(header, " ")
		exact := strings.EqualFold(scheme, "bearer") && strings.TrimLeft(rest, " ") == token
		switch rec.Code {
		case http.StatusNoContent:
			if !exact {
				t.Fatalf("header %q was let through", header)
			}
		case http.StatusUnauthorized:
			if exact {
				t.Fatalf("the right token in %q was refused", header)
			}
			if !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), `Bearer realm="plantstore"`) {
				t.Fatalf("401 without the challenge for %q", header)
			}
			if len(header) > 8 && strings.Contains(rec.Body.String(), header) {
				t.Fatalf("the 401 body echoes the header %q", header)
			}
		default:
			t.Fatalf("status %d for %q", rec.Code, header)
		}
	})
}
