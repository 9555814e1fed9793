package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestInstrumentationRequestID(t *testing.T) {
	cases := []struct {
		name     string
		incoming []string // X-Request-ID values sent
		keep     bool     // the first is echoed rather than replaced
	}{
		{"none sent", nil, false},
		{"well-formed", []string{"req-42.a_b:c"}, true},
		{"128 characters", []string{strings.Repeat("a", 128)}, true},
		{"129 characters", []string{strings.Repeat("a", 129)}, false},
		{"empty", []string{""}, false},
		{"space", []string{"a b"}, false},
		{"newline forging a log field", []string{"a\nlevel=error"}, false},
		{"quote", []string{`a"b`}, false},
		{"non-ASCII", []string{"idé"}, false},
		{"first of two kept", []string{"first", "second"}, true},
	}
	handler, _, _ := instrumented(t)
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/plants", nil)
			req.Header["X-Request-Id"] = c.incoming
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			got := rec.Header().Values("X-Request-ID")
			if len(got) != 1 {
				t.Fatalf("X-Request-ID answered %q, want one value", got)
			}
			switch {
			case c.keep && got[0] != c.incoming[0]:
				t.Errorf("X-Request-ID %q answered as %q, want it kept", c.incoming[0], got[0])
			case !c.keep && !generatedID.MatchString(got[0]):
				t.Errorf("X-Request-ID %q answered as %q, want 32 generated hex digits", c.incoming, got[0])
			case !c.keep && seen[got[0]]:
				t.Errorf("generated id %q twice", got[0])
			}
			seen[got[0]] = true
		})
	}
}
