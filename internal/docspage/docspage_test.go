package docspage_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/apierror/apierrortest"
	"github.com/plantstore/plantstore/internal/docspage"
)

// manifest is assets/manifest.json, as tools/docspage writes it.
type manifest struct {
	Package, Version, License, Integrity string
	Files                                []struct {
		From, Name, SHA256 string
		Size               int64
	}
}

func readManifest(t *testing.T) manifest {
	t.Helper()
	b, err := os.ReadFile("assets/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("assets/manifest.json: %v", err)
	}
	if len(m.Files) == 0 {
		t.Fatal("assets/manifest.json lists no file")
	}
	return m
}

func newHandler(t *testing.T) *docspage.Handler {
	t.Helper()
	h, err := docspage.New()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func serve(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// checkSecurityHeaders: every answer of the page and its files carries the
// policy and the service's other security headers.
func checkSecurityHeaders(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy":      docspage.ContentSecurityPolicy,
		"X-Content-Type-Options":       "nosniff",
		"X-Frame-Options":              "DENY",
		"Referrer-Policy":              "no-referrer",
		"Cross-Origin-Opener-Policy":   "same-origin",
		"Cross-Origin-Resource-Policy": "same-origin",
		"Cache-Control":                "no-cache",
	}
	for k, v := range want {
		if got := rec.Header().Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// The policy holds scripts, requests, fonts and images to the page's own
// origin, allows no inline or evaluated script, and no framing.
func TestContentSecurityPolicyIsStrict(t *testing.T) {
	directives := map[string]string{}
	for _, d := range strings.Split(docspage.ContentSecurityPolicy, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	want := map[string]string{
		"default-src":     "'none'",
		"script-src":      "'self'",
		"connect-src":     "'self'",
		"img-src":         "'self' data:",
		"font-src":        "'self'",
		"base-uri":        "'none'",
		"form-action":     "'none'",
		"frame-ancestors": "'none'",
		"style-src":       "'self' 'unsafe-inline'",
	}
	for name, value := range want {
		if directives[name] != value {
			t.Errorf("%s is %q, want %q", name, directives[name], value)
		}
	}
	if len(directives) != len(want) {
		t.Errorf("directives %v, want exactly %v", directives, want)
	}
}

// The page: HTML with no inline script (the policy would block it), whose
// every script is a file the handler serves; no token asked for.
func TestPage(t *testing.T) {
	h := newHandler(t)
	rec := serve(h, http.MethodGet, "/docs")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /docs: %d %s", rec.Code, rec.Body)
	}
	checkSecurityHeaders(t, rec)
	if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
		t.Errorf("Content-Length %s for a body of %d bytes", cl, rec.Body.Len())
	}
	page := rec.Body.String()
	scripts := regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`).FindAllStringSubmatch(page, -1)
	if len(scripts) == 0 {
		t.Fatal("the page has no script")
	}
	src := regexp.MustCompile(`\bsrc="([^"]+)"`)
	for _, s := range scripts {
		m := src.FindStringSubmatch(s[1])
		if m == nil || strings.TrimSpace(s[2]) != "" {
			t.Errorf("an inline script, which the policy blocks: %s", s[0])
			continue
		}
		// Relative to the page's URL, /docs: docs/NAME is /docs/NAME.
		target := "/" + m[1]
		if rec := serve(h, http.MethodGet, target); rec.Code != http.StatusOK {
			t.Errorf("the page loads %s, which answers %d", target, rec.Code)
		}
	}
	if regexp.MustCompile(`(?i)\son[a-z]+=`).MatchString(page) {
		t.Error("the page has an inline event handler, which the policy blocks")
	}
	if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).MatchString(page) {
		t.Error("the page refers to another origin")
	}
}

// Each file the manifest lists is served under its name, gzip-compressed to
// a client that accepts it and whole to one that does not, the same bytes
// as the npm package's file either way.
func TestVendoredFiles(t *testing.T) {
	h := newHandler(t)
	for _, f := range readManifest(t).Files {
		target := docspage.Path + "/" + f.Name
		t.Run(f.Name, func(t *testing.T) {
			gz := serve(h, http.MethodGet, target, "Accept-Encoding", "gzip, deflate, br")
			if gz.Code != http.StatusOK || gz.Header().Get("Content-Encoding") != "gzip" {
				t.Fatalf("with gzip accepted: %d, Content-Encoding %q", gz.Code, gz.Header().Get("Content-Encoding"))
			}
			checkSecurityHeaders(t, gz)
			if cl := gz.Header().Get("Content-Length"); cl != strconv.Itoa(gz.Body.Len()) {
				t.Errorf("compressed: Content-Length %s for %d bytes", cl, gz.Body.Len())
			}
			zr, err := gzip.NewReader(bytes.NewReader(gz.Body.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			unzipped, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			plain := serve(h, http.MethodGet, target)
			if plain.Code != http.StatusOK || plain.Header().Get("Content-Encoding") != "" {
				t.Fatalf("without Accept-Encoding: %d, Content-Encoding %q", plain.Code, plain.Header().Get("Content-Encoding"))
			}
			for name, body := range map[string][]byte{"compressed": unzipped, "whole": plain.Body.Bytes()} {
				sum := sha256.Sum256(body)
				if int64(len(body)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
					t.Errorf("%s: %d bytes, SHA-256 %x; the manifest records %d, %s", name, len(body), sum, f.Size, f.SHA256)
				}
			}
			if cl := plain.Header().Get("Content-Length"); cl != strconv.FormatInt(f.Size, 10) {
				t.Errorf("whole: Content-Length %s, want %d", cl, f.Size)
			}
			for _, rec := range []*httptest.ResponseRecorder{gz, plain} {
				if rec.Header().Get("Vary") != "Accept-Encoding" || rec.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
					t.Errorf("Vary %q, Content-Type %q", rec.Header().Get("Vary"), rec.Header().Get("Content-Type"))
				}
			}
			if gz.Header().Get("ETag") == plain.Header().Get("ETag") {
				t.Error("the compressed and the whole answer share an ETag: a strong validator names one representation")
			}
			if refused := serve(h, http.MethodGet, target, "Accept-Encoding", "gzip;q=0, identity"); refused.Header().Get("Content-Encoding") != "" {
				t.Error("gzip;q=0 still got gzip")
			}
		})
	}
}

// An answer is revalidated by its ETag: If-None-Match with it (alone, in a
// list, weak, or *) is 304 without a body; another ETag gets the content.
// (HEAD where only headers matter: the renderer decompressed is 4.8 MB.)
func TestConditionalRequests(t *testing.T) {
	h := newHandler(t)
	targets := []string{docspage.Path, docspage.Path + "/page.js", docspage.Path + "/" + readManifest(t).Files[0].Name}
	for _, target := range targets {
		for _, enc := range []string{"", "gzip"} {
			t.Run(target+" "+enc, func(t *testing.T) {
				first := serve(h, http.MethodHead, target, "Accept-Encoding", enc)
				etag := first.Header().Get("ETag")
				if first.Code != http.StatusOK || !regexp.MustCompile(`^"[A-Za-z0-9_-]+"$`).MatchString(etag) {
					t.Fatalf("%d, ETag %q: want 200 and a strong ETag", first.Code, etag)
				}
				for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
					rec := serve(h, http.MethodGet, target, "Accept-Encoding", enc, "If-None-Match", inm)
					if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("ETag") != etag {
						t.Errorf("If-None-Match %s: %d, %d bytes, ETag %q; want 304, none, %s", inm, rec.Code, rec.Body.Len(), rec.Header().Get("ETag"), etag)
					}
					checkSecurityHeaders(t, rec)
				}
				if rec := serve(h, http.MethodHead, target, "Accept-Encoding", enc, "If-None-Match", `"stale"`); rec.Code != http.StatusOK || rec.Header().Get("Content-Length") != first.Header().Get("Content-Length") {
					t.Errorf("a stale ETag: %d, Content-Length %q; want 200 and the content's", rec.Code, rec.Header().Get("Content-Length"))
				}
			})
		}
	}
}

// HEAD: the headers of GET, no body.
func TestHead(t *testing.T) {
	h := newHandler(t)
	for _, target := range []string{docspage.Path, docspage.Path + "/page.js", docspage.Path + "/" + readManifest(t).Files[0].Name} {
		get, head := serve(h, http.MethodGet, target, "Accept-Encoding", "gzip"), serve(h, http.MethodHead, target, "Accept-Encoding", "gzip")
		if head.Code != http.StatusOK || head.Body.Len() != 0 {
			t.Errorf("HEAD %s: %d with %d bytes, want 200 and none", target, head.Code, head.Body.Len())
		}
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding", "ETag", "Content-Security-Policy"} {
			if head.Header().Get(k) != get.Header().Get(k) {
				t.Errorf("HEAD %s: %s %q, GET's %q", target, k, head.Header().Get(k), get.Header().Get(k))
			}
		}
	}
}

// A range of a file is its bytes in the encoding served: of the compressed
// file to a client that accepts gzip, of the content to one that does not.
func TestRange(t *testing.T) {
	h := newHandler(t)
	target := docspage.Path + "/" + readManifest(t).Files[0].Name
	for _, enc := range []string{"gzip", "identity"} {
		whole := serve(h, http.MethodGet, target, "Accept-Encoding", enc)
		part := serve(h, http.MethodGet, target, "Accept-Encoding", enc, "Range", "bytes=10-19")
		if part.Code != http.StatusPartialContent || !bytes.Equal(part.Body.Bytes(), whole.Body.Bytes()[10:20]) {
			t.Errorf("%s: Range bytes=10-19: %d, %q; want 206 and bytes 10 to 19 of the whole", enc, part.Code, part.Body.Bytes())
		}
		if cl := part.Header().Get("Content-Length"); cl != "" && cl != "10" {
			t.Errorf("%s: a range of 10 bytes has Content-Length %s", enc, cl)
		}
		if got := part.Header().Get("Content-Encoding"); got != whole.Header().Get("Content-Encoding") {
			t.Errorf("%s: range's Content-Encoding %q, the whole's %q", enc, got, whole.Header().Get("Content-Encoding"))
		}
	}
}

// A name the page has no file for, the manifest and the page's own file
// name among them, is 404 with the contract's Error body.
func TestUnknownFile(t *testing.T) {
	h := newHandler(t)
	for _, name := range []string{"nope.js", "manifest.json", "index.html", "page.js.gz", readManifest(t).Files[0].Name + ".gz", "..", "%2e%2e"} {
		rec := serve(h, http.MethodGet, docspage.Path+"/"+name)
		if rec.Code != http.StatusNotFound || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d, Content-Type %q; want 404 and the Error body", name, rec.Code, rec.Header().Get("Content-Type"))
		}
		if code, _ := apierrortest.Decode(t, rec.Body.Bytes()); code != int32(apierror.NotFound) {
			t.Errorf("%s: error %d, want %d", name, code, apierror.NotFound)
		}
	}
}
