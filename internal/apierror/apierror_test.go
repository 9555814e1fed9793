package apierror_test

import (
	"bytes"
	"flag"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/apierror/apierrortest"
	"github.com/plantstore/plantstore/internal/docgen"
)

// allCodes lists every defined code with the status it must be sent with.
// A new constant must be added here and to All, which the API reference and
// the OpenAPI document's error table are checked against.
var allCodes = []struct {
	name   string
	code   apierror.Code
	value  int32
	status int
}{
	{"MalformedJSON", apierror.MalformedJSON, 40001, 400},
	{"MissingField", apierror.MissingField, 40002, 400},
	{"WrongType", apierror.WrongType, 40003, 400},
	{"OutOfRange", apierror.OutOfRange, 40004, 400},
	{"DuplicateKey", apierror.DuplicateKey, 40005, 400},
	{"BadCharacters", apierror.BadCharacters, 40006, 400},
	{"CaseVariantKey", apierror.CaseVariantKey, 40007, 400},
	{"BadLimit", apierror.BadLimit, 40008, 400},
	{"BadCursor", apierror.BadCursor, 40009, 400},
	{"CredentialsMissing", apierror.CredentialsMissing, 40101, 401},
	{"TokenRejected", apierror.TokenRejected, 40102, 401},
	{"MalformedAuth", apierror.MalformedAuth, 40103, 401},
	{"InsufficientScope", apierror.InsufficientScope, 40301, 403},
	{"NoClient", apierror.NoClient, 40302, 403},
	{"NotFound", apierror.NotFound, 40401, 404},
	{"PlantNotFound", apierror.PlantNotFound, 40402, 404},
	{"MethodNotAllowed", apierror.MethodNotAllowed, 40501, 405},
	{"IDTaken", apierror.IDTaken, 40901, 409},
	{"BodyTooLarge", apierror.BodyTooLarge, 41301, 413},
	{"UnsupportedMedia", apierror.UnsupportedMedia, 41501, 415},
	{"RateLimited", apierror.RateLimited, 42901, 429},
	{"Internal", apierror.Internal, 50001, 500},
	{"StoreUnavailable", apierror.StoreUnavailable, 50301, 503},
	{"IssuerUnavailable", apierror.IssuerUnavailable, 50302, 503},
	{"StoreFull", apierror.StoreFull, 50701, 507},
}

func TestCodeValuesAndStatus(t *testing.T) {
	seen := map[apierror.Code]string{}
	for _, c := range allCodes {
		t.Run(c.name, func(t *testing.T) {
			if int32(c.code) != c.value {
				t.Errorf("%s = %d, want %d (a released code never changes)", c.name, c.code, c.value)
			}
			if got := c.code.Status(); got != c.status {
				t.Errorf("%s.Status() = %d, want %d", c.name, got, c.status)
			}
			if http.StatusText(c.status) == "" {
				t.Errorf("%s.Status() = %d is not a known HTTP status", c.name, c.status)
			}
			if detail := c.value % 100; detail < 1 {
				t.Errorf("%s = %d: the detail number must be at least 1", c.name, c.value)
			}
			if other, dup := seen[c.code]; dup {
				t.Errorf("%s and %s share the value %d", c.name, other, c.code)
			}
			seen[c.code] = c.name
		})
	}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name     string
		err      *apierror.Error
		wantBody string // exact, without the trailing newline
	}{
		{
			name:     "missing field",
			err:      apierror.New(apierror.MissingField, "name is required"),
			wantBody: `{"error":40002,"message":"name is required"}`,
		},
		{
			name:     "HTML characters are not escaped",
			err:      apierror.New(apierror.OutOfRange, `<b>Rose & Ivy</b> is > 200`),
			wantBody: `{"error":40004,"message":"<b>Rose & Ivy</b> is > 200"}`,
		},
		{
			name:     "quotes and backslashes are escaped as JSON requires",
			err:      apierror.New(apierror.DuplicateKey, `duplicate key "a\b"`),
			wantBody: `{"error":40005,"message":"duplicate key \"a\\b\""}`,
		},
		{
			name:     "non-ASCII text is sent as UTF-8",
			err:      apierror.New(apierror.BadCharacters, "name 🌱 é"),
			wantBody: `{"error":40006,"message":"name 🌱 é"}`,
		},
		{
			name:     "control characters in a message are escaped",
			err:      apierror.New(apierror.BadCharacters, "a\nb"),
			wantBody: `{"error":40006,"message":"a\nb"}`,
		},
		{
			name:     "empty message becomes the status text",
			err:      apierror.New(apierror.NotFound, ""),
			wantBody: `{"error":40401,"message":"Not Found"}`,
		},
		{
			name:     "empty message of a 503",
			err:      &apierror.Error{Code: apierror.StoreUnavailable},
			wantBody: `{"error":50301,"message":"Service Unavailable"}`,
		},
		{
			name:     "empty message of a 413",
			err:      apierror.New(apierror.BodyTooLarge, ""),
			wantBody: `{"error":41301,"message":"Request Entity Too Large"}`,
		},
		{
			name:     "internal",
			err:      apierror.New(apierror.Internal, "internal error"),
			wantBody: `{"error":50001,"message":"internal error"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			apierror.Write(rec, tt.err)

			if want := int(tt.err.Code) / 100; rec.Code != want {
				t.Errorf("status = %d, want %d", rec.Code, want)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			body := rec.Body.Bytes()
			if got := strings.TrimSuffix(string(body), "\n"); got != tt.wantBody {
				t.Errorf("body = %s, want %s", got, tt.wantBody)
			}
			if n := bytes.Count(body, []byte("\n")); n > 1 || (n == 1 && body[len(body)-1] != '\n') {
				t.Errorf("body %q has more than one trailing newline", body)
			}
			if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length = %q, want %d", cl, len(body))
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
			if got := rec.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", got)
			}
			code, msg := apierrortest.Decode(t, body)
			if code != int32(tt.err.Code) {
				t.Errorf("error = %d, want %d", code, tt.err.Code)
			}
			if msg == "" {
				t.Error("message is empty")
			}
		})
	}
}

// TestWriteEveryCode: every code yields its status and a complete Error body,
// even when the caller leaves the message empty.
func TestWriteEveryCode(t *testing.T) {
	for _, c := range allCodes {
		for _, message := range []string{"", "something is wrong"} {
			rec := httptest.NewRecorder()
			apierror.Write(rec, apierror.New(c.code, message))
			if rec.Code != c.status {
				t.Errorf("%s: status = %d, want %d", c.name, rec.Code, c.status)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s: Content-Type = %q", c.name, ct)
			}
			code, msg := apierrortest.Decode(t, rec.Body.Bytes())
			if code != c.value {
				t.Errorf("%s: error = %d, want %d", c.name, code, c.value)
			}
			want := message
			if want == "" {
				want = http.StatusText(c.status)
			}
			if msg != want {
				t.Errorf("%s: message = %q, want %q", c.name, msg, want)
			}
		}
	}
}

func TestWriteKeepsHeadersSetBefore(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Allow", "POST")
	rec.Header().Set("Retry-After", "1")
	rec.Header().Set("Content-Type", "text/html") // must be replaced
	apierror.Write(rec, apierror.New(apierror.MethodNotAllowed, "use POST"))
	if got := rec.Header().Get("Allow"); got != "POST" {
		t.Errorf("Allow = %q, want POST", got)
	}
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	if got := rec.Header().Values("Content-Type"); len(got) != 1 || got[0] != "application/json" {
		t.Errorf("Content-Type = %q, want exactly application/json", got)
	}
}

func TestWriteJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	apierror.WriteJSON(rec, http.StatusOK, map[string]string{"name": "Rose & Ivy <3"})
	if rec.Code != http.StatusOK {
		t.Errorf("status = %d, want 200", rec.Code)
	}
	if got := rec.Body.String(); got != `{"name":"Rose & Ivy <3"}`+"\n" {
		t.Errorf("body = %q", got)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
}

// TestWriteJSONUnencodable: a value JSON cannot carry is a bug; the client
// still gets a well-formed Error body, with nothing internal in it.
func TestWriteJSONUnencodable(t *testing.T) {
	for name, v := range map[string]any{
		"NaN":     math.NaN(),
		"channel": make(chan int),
		"func":    func() {},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			apierror.WriteJSON(rec, http.StatusOK, v)
			if rec.Code != http.StatusInternalServerError {
				t.Errorf("status = %d, want 500", rec.Code)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			code, msg := apierrortest.Decode(t, rec.Body.Bytes())
			if code != int32(apierror.Internal) || msg != "internal error" {
				t.Errorf("body = %d %q, want 50001 \"internal error\"", code, msg)
			}
			if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
				t.Errorf("Content-Length = %q, want %d", cl, rec.Body.Len())
			}
		})
	}
}

func TestErrorAndNew(t *testing.T) {
	e := apierror.New(apierror.IDTaken, "id 7 is taken")
	if e.Code != apierror.IDTaken || e.Message != "id 7 is taken" {
		t.Errorf("New() = %+v", e)
	}
	if got, want := e.Error(), "40901: id 7 is taken"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var err error = e // *Error is an error
	if err.Error() != e.Error() {
		t.Error("*Error does not implement error consistently")
	}
}

// TestAllListsEveryCode: All, which the API reference is made from, has
// every constant once, in ascending order, each with a meaning a table cell
// can hold.
func TestAllListsEveryCode(t *testing.T) {
	all := apierror.All()
	if len(all) != len(allCodes) {
		t.Errorf("All() has %d codes, the constants are %d", len(all), len(allCodes))
	}
	for i, c := range allCodes {
		if i >= len(all) {
			break
		}
		if all[i].Code != c.code {
			t.Errorf("All()[%d] = %d, want %s (%d): every constant, in ascending order", i, all[i].Code, c.name, c.value)
		}
		if m := all[i].Meaning; m == "" || strings.ContainsAny(m, "|\n") {
			t.Errorf("%s: meaning %q must be one non-empty line without |", c.name, m)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the generated parts of the docs")

// errorTable is the error-code table of the API reference.
func errorTable() string {
	rows := make([][]string, 0, len(apierror.All()))
	for _, d := range apierror.All() {
		rows = append(rows, []string{strconv.Itoa(int(d.Code)), strconv.Itoa(d.Code.Status()), d.Meaning})
	}
	return docgen.Table([]string{"error", "status", "meaning"}, rows)
}

// TestErrorsDoc: docs/api.md's error table is All.
func TestErrorsDoc(t *testing.T) {
	docgen.Check(t, "docs/api.md", "errors", errorTable(), *update)
}

// TestCodesDocumentedInOpenAPI: the served OpenAPI document's error table
// (info.description, inside a YAML block, so checked rather than rewritten)
// has the rows of All, the same text, nothing more.
func TestCodesDocumentedInOpenAPI(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(docgen.Root(t), "api", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\s*(\|\s*\d{5}\s*\|.*)$`)
	var got []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		got = append(got, strings.TrimSpace(m[1]))
	}
	want := strings.Split(strings.TrimSpace(errorTable()), "\n")[2:] // the rows, not the header
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the error table of api/openapi.yaml (info.description) is not apierror.All(); make its rows these:\n%s\ndifference:\n%s",
			strings.Join(want, "\n"), docgen.Diff(strings.Join(got, "\n"), strings.Join(want, "\n")))
	}
}
