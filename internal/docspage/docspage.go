// Package docspage serves the API reference page, GET /docs (contract
// section 12): an HTML page and, under /docs/, the files it loads, all
// embedded in the binary. The renderer is Scalar's API reference, vendored
// from its npm package at the version assets/manifest.json pins (make
// docs-page-update rewrites both, make lint checks them); the page has it
// render the document the service serves, /openapi.yaml.
package docspage

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plantstore/plantstore/internal/apierror"
)

// Path is the page's path; its files are under Path + "/".
const Path = "/docs"

//go:embed assets
var assets embed.FS

const (
	pageFile     = "index.html"
	manifestFile = "manifest.json" // the vendoring record, not served
)

// ContentSecurityPolicy is the page's policy: scripts and requests of this
// origin only, no inline script, nothing framing the page. Styles may be
// inline: the renderer injects its stylesheet from its script and sets style
// attributes, which no hash or nonce can allow; CSS runs no code, and with
// images, fonts and requests held to this origin it reaches no other.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"connect-src 'self'; img-src 'self' data:; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// securityHeaders go on every answer of the page and its files.
var securityHeaders = map[string]string{
	"Content-Security-Policy":      ContentSecurityPolicy,
	"X-Content-Type-Options":       "nosniff",
	"X-Frame-Options":              "DENY",
	"Referrer-Policy":              "no-referrer",
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
}

// contentTypes are the types of the files embedded, by extension (not the
// system's MIME table, which differs between machines).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// file is one embedded file, ready to serve: nothing is computed per request.
type file struct {
	body        []byte // as embedded; gzip-compressed when gzipped
	gzipped     bool
	contentType string
	etag        string // strong: of body, told apart per encoding
	// decompressed is the content of a gzipped file, made on the first
	// request of a client that does not accept gzip (rare: every browser does).
	decompressed func() []byte
}

// Handler serves the page at Path and its files at Path/<name>. A file
// embedded as NAME.gz is served as NAME, compressed to a client that
// accepts gzip (every browser) and decompressed to one that does not.
type Handler struct {
	page  *file
	files map[string]*file
}

// New reads the embedded page and files and computes their validators.
func New() (*Handler, error) {
	h := &Handler{files: map[string]*file{}}
	entries, err := fs.ReadDir(assets, "assets")
	if err != nil {
		return nil, fmt.Errorf("docs page: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || name == manifestFile {
			continue
		}
		body, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return nil, fmt.Errorf("docs page: %w", err)
		}
		f := &file{body: body}
		if base, ok := strings.CutSuffix(name, ".gz"); ok {
			name, f.gzipped = base, true
			f.decompressed = sync.OnceValue(func() []byte {
				// make lint checks that each file decompresses to its content
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					return nil
				}
				plain, _ := io.ReadAll(zr)
				return plain
			})
		}
		f.contentType = contentTypes[path.Ext(name)]
		if f.contentType == "" {
			return nil, fmt.Errorf("docs page: no content type for %s", name)
		}
		sum := sha256.Sum256(body)
		f.etag = base64.RawURLEncoding.EncodeToString(sum[:18])
		if name == pageFile {
			h.page = f
			continue
		}
		h.files[name] = f
	}
	if h.page == nil {
		return nil, fmt.Errorf("docs page: no %s embedded", pageFile)
	}
	return h, nil
}

// ServeHTTP answers GET and HEAD (the router admits no other method) of
// the page and its files. An answer may be cached, but is revalidated each
// time (no-cache): an unchanged file costs a 304 and no body, and a new
// binary's files are never stale in a browser.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := h.page
	if r.URL.Path != Path {
		name, _ := strings.CutPrefix(r.URL.Path, Path+"/")
		if f = h.files[name]; f == nil {
			apierror.Write(w, apierror.New(apierror.NotFound, "no such file of the reference page: the page is "+Path))
			return
		}
	}
	hdr := w.Header()
	for k, v := range securityHeaders {
		hdr.Set(k, v)
	}
	compressed := f.gzipped && acceptsGzip(r.Header.Values("Accept-Encoding"))
	etag := `"` + f.etag + `"`
	if f.gzipped {
		hdr.Set("Vary", "Accept-Encoding")
		if compressed {
			etag = `"` + f.etag + `-gzip"`
		}
	}
	hdr.Set("ETag", etag)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Content-Type", f.contentType)
	body := f.body
	switch {
	case compressed:
		hdr.Set("Content-Encoding", "gzip")
		if r.Header.Get("Range") == "" { // ServeContent gives an encoded body no length
			hdr.Set("Content-Length", strconv.Itoa(len(body)))
		}
	case f.gzipped:
		body = f.decompressed()
	}
	// ServeContent answers If-None-Match (a 304), HEAD, ranges and the
	// length; no modification time: the ETag is the validator.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reads Accept-Encoding (RFC 9110 12.5.3): gzip, or *, with a
// weight above zero.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" && coding != "*" {
				continue
			}
			if q, ok := strings.CutPrefix(strings.ReplaceAll(strings.ToLower(params), " ", ""), "q="); ok {
				if w, err := strconv.ParseFloat(q, 64); err != nil || w <= 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}
