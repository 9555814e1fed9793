package e2e

import (
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/apierror"
)

// TestDocsPage: the built binary serves the reference page without a token,
// and `make run`'s development banner prints its URL beside the curl line;
// --docs-page=false (or PLANTSTORE_DOCS_PAGE=false) leaves /docs an unknown
// path and the banner without it. The page in a browser is
// tools/openapi's TestReferencePage.
func TestDocsPage(t *testing.T) {
	s := startService(t, options{Dev: true})
	page := s.API + "/docs"
	if logs := s.Logs.String(); !strings.Contains(logs, "\n  "+page+"\n") {
		t.Fatalf("the banner does not print the page's URL %s on a line of its own:\n%s", page, logs)
	}
	for _, path := range []string{"/docs", "/docs/page.js", "/docs/scalar-api-reference.js"} {
		r := s.Do(t, "GET", path, "", map[string]string{"Authorization": "", "Accept-Encoding": "gzip"})
		if r.Status != 200 || r.Header.Get("Content-Security-Policy") == "" || r.Header.Get("ETag") == "" {
			t.Errorf("GET %s without a token: %d, CSP %q, ETag %q", path, r.Status, r.Header.Get("Content-Security-Policy"), r.Header.Get("ETag"))
		}
		again := s.Do(t, "GET", path, "", map[string]string{"Authorization": "", "Accept-Encoding": "gzip", "If-None-Match": r.Header.Get("ETag")})
		if again.Status != 304 || len(again.Body) != 0 {
			t.Errorf("GET %s with its ETag: %d and %d bytes, want 304 and none", path, again.Status, len(again.Body))
		}
	}
	if r := s.Do(t, "POST", "/plants", `{"id": 1, "name": "a"}`, map[string]string{"Authorization": ""}); r.Status != 401 {
		t.Errorf("POST /plants without a token beside the page: %d, want 401", r.Status)
	}

	for _, off := range []options{
		{Dev: true, Extra: []string{"--docs-page=false"}},
		{Dev: true, Env: []string{"PLANTSTORE_DOCS_PAGE=false"}},
	} {
		s := startService(t, off)
		if logs := s.Logs.String(); strings.Contains(logs, "/docs") {
			t.Errorf("%v: the banner names the page:\n%s", off, logs)
		}
		for _, path := range []string{"/docs", "/docs/page.js"} {
			r := s.Do(t, "GET", path, "", nil)
			if code := r.ErrorCode(t); r.Status != 404 || code != int32(apierror.NotFound) {
				t.Errorf("%v: GET %s: %d %d, want 404 %d", off, path, r.Status, code, apierror.NotFound)
			}
		}
	}
}
