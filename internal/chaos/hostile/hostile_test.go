package hostile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store"
)

// The service's read limits in this scenario, short so that requests that
// never end are cut quickly.
const (
	readHeaderTimeout = time.Second
	readTimeout       = 2 * time.Second
	// answerLimit is how long a connection may go without an answer or a
	// close before the test calls it a hang: the read timeout plus a wide
	// margin for a machine whose 2 cores are shared with other test
	// processes.
	answerLimit = readTimeout + 8*time.Second
)

// outcome is what one request got.
type outcome struct {
	status int   // 0: the connection closed without a response
	code   int32 // the Error body's code; 0 for a 200 Plant; -1 for net/http's own plain-text answer
}

func (o outcome) String() string {
	switch {
	case o.status == 0:
		return "closed"
	case o.code == -1:
		return strconv.Itoa(o.status) + "/net-http"
	case o.code == 0:
		return strconv.Itoa(o.status)
	default:
		return strconv.Itoa(o.status) + "/" + strconv.Itoa(int(o.code))
	}
}

var closed = outcome{}

func apiError(code int32) outcome { return outcome{status: int(code) / 100, code: code} }
func netHTTP(status int) outcome  { return outcome{status: status, code: -1} }

// class is one kind of hostile input: the raw requests that make it up and
// the outcomes the contract allows for them. A request that net/http itself
// refuses never reaches the service; its plain answer (400, 431) or a closed
// connection is what a client gets.
type class struct {
	name     string
	requests []string
	want     []outcome
	// stall keeps the connection open after the request is written, as a
	// client that never finishes sending; otherwise the test half-closes its
	// side, so that the server reads whatever follows the request, a smuggled
	// one included, and then closes.
	stall bool
	// stores names the Redis key a request of the class may create: only
	// for inputs the contract accepts (the id -0 is the id 0).
	stores string
}

// env is what the classes are built from.
type env struct {
	token string
	big   int // size of the oversized header line and body, larger in full mode
}

// smuggled is a valid, authenticated create of a plant whose id marks it:
// hidden after or inside another request's body, it must never be served.
func (e *env) smuggled(id int) string {
	return e.post(fmt.Sprintf(`{"id":%d,"name":"smuggled"}`, id))
}

// headers are the usual request headers, without those named.
func (e *env) headers(without ...string) []string {
	var h []string
	for _, kv := range []string{"Host: plantstore", "Authorization: Bearer " + e.token, "Content-Type: application/json"} {
		if !slices.Contains(without, kv[:strings.IndexByte(kv, ':')]) {
			h = append(h, kv)
		}
	}
	return h
}

// request writes a raw request: the request line, the header lines and the body.
func request(line string, headers []string, body string) string {
	var b strings.Builder
	b.WriteString(line + "\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n" + body)
	return b.String()
}

func contentLength(body string) string { return "Content-Length: " + strconv.Itoa(len(body)) }

// post is POST /plants with the usual headers, Content-Length and extra headers.
func (e *env) post(body string, extra ...string) string {
	return request("POST /plants HTTP/1.1", append(append(e.headers(), contentLength(body)), extra...), body)
}

// postWith is POST /plants with exactly the given headers besides Host and Content-Length.
func postWith(headers []string, body string) string {
	return request("POST /plants HTTP/1.1", append([]string{"Host: plantstore", contentLength(body)}, headers...), body)
}

func (e *env) posts(bodies ...string) []string {
	var r []string
	for _, b := range bodies {
		r = append(r, e.post(b))
	}
	return r
}

func chunked(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(p), p)
	}
	return b.String() + "0\r\n\r\n"
}

// classes are the hostile inputs, at least 40 kinds.
func (e *env) classes() []class {
	valid := func(id int) string { return fmt.Sprintf(`{"id":%d,"name":"Monstera","tag":"tropical"}`, id) }
	bad := apiError
	deepArrays := `{"id":1,"name":"a","x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`
	deepObjects := `{"id":1,"name":"a","x":` + strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat(`}`, 10001)
	huge := strings.Repeat("a", e.big)
	tok := e.token
	auth := func(values ...string) string {
		var h []string
		for _, v := range values {
			h = append(h, "Authorization: "+v)
		}
		return postWith(append(h, "Content-Type: application/json"), valid(700))
	}
	http400 := []outcome{netHTTP(400), closed}
	return []class{
		// JSON structure.
		{name: "deep-nesting-arrays", requests: e.posts(deepArrays), want: []outcome{bad(40001)}},
		{name: "deep-nesting-objects", requests: e.posts(deepObjects), want: []outcome{bad(40001)}},
		{name: "deep-nesting-unclosed", requests: e.posts(strings.Repeat("[", 60000), strings.Repeat(`{"a":`, 12000)), want: []outcome{bad(40001)}},
		{name: "body-not-an-object", requests: e.posts(`[]`, `[{"id":1,"name":"a"}]`, `null`, `1`, `"x"`, `true`), want: []outcome{bad(40001)}},
		{name: "trailing-data", requests: e.posts(valid(1)+`x`, valid(1)+valid(2), valid(1)+`]`, valid(1)+"\x00"), want: []outcome{bad(40001)}},
		{name: "byte-order-mark", requests: e.posts("\xef\xbb\xbf" + valid(1)), want: []outcome{bad(40001)}},
		{name: "empty-body", requests: e.posts(``, " \r\n\t "), want: []outcome{bad(40001)}},
		{name: "malformed-json", requests: e.posts(`{"id":1,"name":"a"`, `{"id":1,"name":'a'}`, `{id:1,"name":"a"}`, `{"id":1,,"name":"a"}`, `{"id":1,"name":"a",}`), want: []outcome{bad(40001)}},
		{name: "missing-field", requests: e.posts(`{"name":"a"}`, `{"id":1}`, `{}`), want: []outcome{bad(40002)}},
		{name: "duplicate-key", requests: e.posts(`{"id":1,"id":2,"name":"a"}`, `{"id":1,"name":"a","name":"a"}`, `{"id":1,"name":"a","n\u0061me":"b"}`, `{"id":1,"name":"a","tag":null,"tag":"x"}`), want: []outcome{bad(40005)}},
		{name: "case-variant-key", requests: e.posts(`{"ID":1,"name":"a"}`, `{"id":1,"Name":"a"}`, `{"id":1,"name":"a","TAG":"x"}`, `{"id":1,"name":"a","nAmE":"b"}`), want: []outcome{bad(40007)}},

		// Numbers.
		{name: "id-exponent-huge", requests: e.posts(`{"id":1e400,"name":"a"}`, `{"id":1E+400,"name":"a"}`), want: []outcome{bad(40003)}},
		{name: "id-exponent-tiny", requests: e.posts(`{"id":1e-400,"name":"a"}`, `{"id":-1e-400,"name":"a"}`), want: []outcome{bad(40003)}},
		{name: "id-fraction", requests: e.posts(`{"id":1.0,"name":"a"}`, `{"id":-0.0,"name":"a"}`, `{"id":1.5,"name":"a"}`), want: []outcome{bad(40003)}},
		{name: "id-over-int64", requests: e.posts(`{"id":9223372036854775808,"name":"a"}`, `{"id":-9223372036854775809,"name":"a"}`, `{"id":18446744073709551616,"name":"a"}`, `{"id":`+strings.Repeat("9", 1000)+`,"name":"a"}`), want: []outcome{bad(40004)}},
		{name: "id-not-json-number", requests: e.posts(`{"id":0x10,"name":"a"}`, `{"id":01,"name":"a"}`, `{"id":+1,"name":"a"}`, `{"id":NaN,"name":"a"}`, `{"id":Infinity,"name":"a"}`, `{"id":.5,"name":"a"}`), want: []outcome{bad(40001)}},
		{name: "id-minus-zero", requests: e.posts(`{"id":-0,"name":"Zero"}`), want: []outcome{{status: 200}}, stores: store.PlantKey("plantstore:", 0)},

		// Strings.
		{name: "name-1MiB", requests: e.posts(`{"id":1,"name":"` + strings.Repeat("a", 1<<20) + `"}`), want: []outcome{bad(41301), closed}},
		{name: "body-over-limit-chunked", requests: []string{request("POST /plants HTTP/1.1", append(e.headers(), "Transfer-Encoding: chunked"), chunked(`{"id":1,"name":"`, strings.Repeat("a", 100<<10), `"}`))}, want: []outcome{bad(41301), closed}},
		{name: "name-too-long", requests: e.posts(`{"id":1,"name":"`+strings.Repeat("é", 201)+`"}`, `{"id":1,"name":""}`, `{"id":1,"name":"a","tag":"`+strings.Repeat("🌱", 101)+`"}`, `{"id":1,"name":"`+strings.Repeat("a", 60000)+`"}`), want: []outcome{bad(40004)}},
		{name: "invalid-utf8", requests: e.posts("{\"id\":1,\"name\":\"\xff\"}", "{\"id\":1,\"name\":\"\xc0\xaf\"}", "{\"id\":1,\"name\":\"\xed\xa0\x80\"}", "{\"id\":1,\"name\":\"a\",\"\xfe\":1}", "{\"id\":1,\"name\":\"a\xe2\x82\"}"), want: []outcome{bad(40001)}},
		{name: "nul-raw", requests: e.posts("{\"id\":1,\"name\":\"a\x00b\"}", "{\"id\":1,\x00\"name\":\"a\"}", "\x00"), want: []outcome{bad(40001)}},
		{name: "nul-escaped", requests: e.posts(`{"id":1,"name":"a\u0000b"}`, `{"id":1,"name":"a","tag":"\u0000"}`), want: []outcome{bad(40006)}},
		{name: "control-characters", requests: e.posts(`{"id":1,"name":"a\u0007"}`, "{\"id\":1,\"name\":\"a\x7f\"}", `{"id":1,"name":"a\n"}`, "{\"id\":1,\"name\":\"a\u0085\"}"), want: []outcome{bad(40006)}},
		{name: "lone-surrogate", requests: e.posts(`{"id":1,"name":"\ud800"}`, `{"id":1,"name":"\udc00"}`, `{"id":1,"name":"\udc00\ud800"}`, `{"id":1,"name":"a","tag":"\ud83c"}`), want: []outcome{bad(40006)}},

		// Types.
		{name: "wrong-type-id", requests: e.posts(`{"id":"1","name":"a"}`, `{"id":true,"name":"a"}`, `{"id":null,"name":"a"}`, `{"id":[1],"name":"a"}`, `{"id":{},"name":"a"}`), want: []outcome{bad(40003)}},
		{name: "wrong-type-name", requests: e.posts(`{"id":1,"name":5}`, `{"id":1,"name":null}`, `{"id":1,"name":["a"]}`, `{"id":1,"name":{"a":1}}`, `{"id":1,"name":false}`), want: []outcome{bad(40003)}},
		{name: "wrong-type-tag", requests: e.posts(`{"id":1,"name":"a","tag":5}`, `{"id":1,"name":"a","tag":true}`, `{"id":1,"name":"a","tag":["x"]}`, `{"id":1,"name":"a","tag":{}}`), want: []outcome{bad(40003)}},

		// Content types.
		{name: "content-type", requests: []string{
			postWith([]string{"Authorization: Bearer " + tok, "Content-Type: text/plain"}, valid(701)),
			postWith([]string{"Authorization: Bearer " + tok}, valid(701)),
			postWith([]string{"Authorization: Bearer " + tok, "Content-Type: application/json; charset=latin1"}, valid(701)),
			postWith([]string{"Authorization: Bearer " + tok, "Content-Type: application/json; boundary=x"}, valid(701)),
			postWith([]string{"Authorization: Bearer " + tok, "Content-Type: application/jsonx"}, valid(701)),
			postWith([]string{"Authorization: Bearer " + tok, "Content-Type: application/json, text/plain"}, valid(701)),
			postWith([]string{"Authorization: Bearer " + tok, "Content-Type: multipart/form-data; boundary=x"}, valid(701)),
			postWith([]string{"Authorization: Bearer " + tok, "Content-Type: text/plain", "Content-Type: application/json"}, valid(701)),
		}, want: []outcome{bad(41501)}},

		// Oversized and malformed HTTP.
		{name: "megabyte-header-line", requests: []string{e.post(valid(702), "X-Big: "+huge)}, want: []outcome{netHTTP(431), netHTTP(400), closed}},
		{name: "many-headers", requests: []string{e.post(valid(703), strings.Split(strings.Repeat("X-Many: v\n", e.big/10), "\n")[:e.big/10]...)}, want: []outcome{netHTTP(431), netHTTP(400), closed}},
		{name: "header-never-ends", requests: []string{"POST /plants HTTP/1.1\r\nHost: plantstore\r\nX-Slow: "}, stall: true, want: []outcome{closed, netHTTP(408), netHTTP(400)}},
		{name: "chunked-never-ends", requests: []string{request("POST /plants HTTP/1.1", append(e.headers(), "Transfer-Encoding: chunked"), "5\r\n{\"id\"\r\n")}, stall: true, want: []outcome{bad(40001), closed}},
		{name: "body-shorter-than-length", requests: []string{request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: 100"), valid(704))}, want: []outcome{bad(40001), closed}},
		{name: "body-never-ends", requests: []string{request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: 100"), `{"id":705,`)}, stall: true, want: []outcome{bad(40001), closed}},
		{name: "malformed-chunks", requests: []string{
			request("POST /plants HTTP/1.1", append(e.headers(), "Transfer-Encoding: chunked"), "ffffffffffffffffffff\r\n"+valid(706)+"\r\n0\r\n\r\n"),
			request("POST /plants HTTP/1.1", append(e.headers(), "Transfer-Encoding: chunked"), "zz\r\n"+valid(706)+"\r\n0\r\n\r\n"),
			request("POST /plants HTTP/1.1", append(e.headers(), "Transfer-Encoding: chunked"), "3\r\n"+valid(706)+"\r\n0\r\n\r\n"),
		}, want: []outcome{bad(40001), closed}},
		{name: "header-malformed", requests: []string{
			request("POST /plants HTTP/1.1", append(e.headers(), "X-Bad Name: v", contentLength(valid(707))), valid(707)),
			request("POST /plants HTTP/1.1", append(e.headers(), "X-Nul: a\x00b", contentLength(valid(707))), valid(707)),
			request("POST /plants HTTP/1.1", append([]string{" X-Leading: space"}, append(e.headers(), contentLength(valid(707)))...), valid(707)),
			request("POST /plants HTTP/1.1", append(e.headers(), ": no-name", contentLength(valid(707))), valid(707)),
			request("POST /plants HTTP/1.1", []string{"Authorization: Bearer " + tok, "Content-Type: application/json", contentLength(valid(707))}, valid(707)), // no Host
		}, want: http400},

		// Request smuggling: conflicting framing, each followed by a valid
		// authenticated create that must never be served.
		{name: "smuggling-CL.TE", requests: []string{request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: 4", "Transfer-Encoding: chunked"), chunked(e.smuggled(900001)))}, want: []outcome{bad(40001)}},
		{name: "smuggling-TE.CL", requests: []string{request("POST /plants HTTP/1.1", append(e.headers(), "Transfer-Encoding: chunked", contentLength("0\r\n\r\n"+e.smuggled(900002))), "0\r\n\r\n"+e.smuggled(900002))}, want: []outcome{bad(40001)}},
		{name: "smuggling-TE.TE", requests: []string{
			request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: 5", "Transfer-Encoding: xchunked"), "0\r\n\r\n"+e.smuggled(900003)),
			request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: 5", "Transfer-Encoding: chunked, identity"), "0\r\n\r\n"+e.smuggled(900003)),
			request("POST /plants HTTP/1.1", append(e.headers(), "Transfer-Encoding: chunked", "Transfer-Encoding: identity"), "0\r\n\r\n"+e.smuggled(900003)),
			request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: 5", "Transfer-Encoding : chunked"), "0\r\n\r\n"+e.smuggled(900003)),
			request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: 5", "Transfer-Encoding:\x0bchunked"), "0\r\n\r\n"+e.smuggled(900003)),
		}, want: http400}, // net/http says 501, which the server turns into 400
		{name: "smuggling-duplicate-CL", requests: []string{
			request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: 5", "Content-Length: 200"), "0\r\n\r\n"+e.smuggled(900004)),
			request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: 5, 200"), "0\r\n\r\n"+e.smuggled(900004)),
			request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: +5"), "0\r\n\r\n"+e.smuggled(900004)),
			request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: -1"), "0\r\n\r\n"+e.smuggled(900004)),
			request("POST /plants HTTP/1.1", append(e.headers(), "Content-Length: 0x05"), "0\r\n\r\n"+e.smuggled(900004)),
		}, want: http400},
		{name: "smuggling-request-line", requests: []string{
			"POST /plants HTTP/1.1 " + e.smuggled(900005),
			"POST /plants HTTP/1.1\rX: y\r\n" + strings.TrimPrefix(e.smuggled(900005), "POST /plants HTTP/1.1\r\n"),
			"POST /plants\r\n" + e.smuggled(900005),
		}, want: http400},
		{name: "smuggling-encoded-CRLF", requests: []string{
			request("POST /plants%0d%0aContent-Length:%200%0d%0a%0d%0a HTTP/1.1", append(e.headers(), contentLength(valid(900006))), valid(900006)),
			request("POST /plants%0a HTTP/1.1", append(e.headers(), contentLength(valid(900006))), valid(900006)),
		}, want: []outcome{bad(40401)}},

		// Request lines, targets and methods.
		{name: "http-0.9", requests: []string{"GET /plants\r\n\r\n", "GET /openapi.yaml\r\n"}, want: http400},
		{name: "garbage-request-line", requests: []string{
			"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + strings.Repeat("\x00", 64),
			"\x00\x00\x00\x00\r\n\r\n",
			"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
			"GET\r\n\r\n",
			"🌱 /plants HTTP/1.1\r\nHost: plantstore\r\n\r\n",
			"POST  /plants  HTTP/1.1\r\nHost: plantstore\r\n\r\n",
		}, want: []outcome{netHTTP(400), closed, bad(40401), bad(40501)}},
		{name: "http-version", requests: []string{
			request("POST /plants HTTP/2.0", append(e.headers(), contentLength(valid(708))), valid(708)),
			request("POST /plants HTTP/9.9", append(e.headers(), contentLength(valid(708))), valid(708)),
			request("POST /plants HTTP/1.10", append(e.headers(), contentLength(valid(708))), valid(708)),
		}, want: http400}, // net/http says 505, which the server turns into 400
		{name: "absolute-uri", requests: []string{
			request("POST http://evil.example/plants HTTP/1.1", append(e.headers(), contentLength(`{"id":709}`)), `{"id":709}`),
			request("POST https://plantstore:1/plants?x=1 HTTP/1.1", append(e.headers(), contentLength(`{"id":709}`)), `{"id":709}`),
		}, want: []outcome{bad(40002)}},
		{name: "path-traversal", requests: []string{
			request("POST /plants/../plants HTTP/1.1", append(e.headers(), contentLength(valid(710))), valid(710)),
			request("POST //plants HTTP/1.1", append(e.headers(), contentLength(valid(710))), valid(710)),
			request("POST /./plants HTTP/1.1", append(e.headers(), contentLength(valid(710))), valid(710)),
			request("POST /plants/%2e%2e/plants HTTP/1.1", append(e.headers(), contentLength(valid(710))), valid(710)),
			request("POST /%2e/plants HTTP/1.1", append(e.headers(), contentLength(valid(710))), valid(710)),
			request("POST /plants/ HTTP/1.1", append(e.headers(), contentLength(valid(710))), valid(710)),
			request("POST /PLANTS HTTP/1.1", append(e.headers(), contentLength(valid(710))), valid(710)),
			request("POST /plants%2f HTTP/1.1", append(e.headers(), contentLength(valid(710))), valid(710)),
			request("POST /plants;x=1 HTTP/1.1", append(e.headers(), contentLength(valid(710))), valid(710)),
		}, want: []outcome{bad(40401)}},
		{name: "methods", requests: []string{
			request("TRACE /plants HTTP/1.1", e.headers(), ""),
			request("TRACK /plants HTTP/1.1", e.headers(), ""),
			request("PUT /plants HTTP/1.1", append(e.headers(), contentLength(valid(711))), valid(711)),
			request("DELETE /plants HTTP/1.1", e.headers(), ""),
			request("PATCH /plants HTTP/1.1", append(e.headers(), contentLength(valid(711))), valid(711)),
			request("post /plants HTTP/1.1", append(e.headers(), contentLength(valid(711))), valid(711)),
			request("OPTIONS /plants HTTP/1.1", e.headers(), ""),
			request("PUT /plants/1 HTTP/1.1", append(e.headers(), contentLength(valid(711))), valid(711)),
			request("POST /plants/1 HTTP/1.1", append(e.headers(), contentLength(valid(711))), valid(711)),
			request("POST /openapi.yaml HTTP/1.1", append(e.headers(), contentLength(valid(711))), valid(711)),
		}, want: []outcome{bad(40501)}},
		{name: "method-connect", requests: []string{
			request("CONNECT plantstore:443 HTTP/1.1", e.headers(), ""),
			request("CONNECT /plants HTTP/1.1", append(e.headers(), contentLength(valid(712))), valid(712)),
		}, want: []outcome{bad(40401), bad(40501), netHTTP(400), closed}},
		{name: "method-malformed", requests: []string{
			request("P@ST /plants HTTP/1.1", append(e.headers(), contentLength(valid(713))), valid(713)),
			request("POST\x00 /plants HTTP/1.1", append(e.headers(), contentLength(valid(713))), valid(713)),
		}, want: http400},
		{name: "options-asterisk", requests: []string{request("OPTIONS * HTTP/1.1", e.headers(), "")}, want: []outcome{netHTTP(200), bad(40401)}},

		// Tokens. The body is a valid create, so that a request let through
		// would store a plant.
		{name: "token-missing", requests: []string{auth()}, want: []outcome{bad(40101)}},
		{name: "token-empty", requests: []string{auth(""), auth("Bearer"), auth("Bearer "), auth("   ")}, want: []outcome{bad(40103)}},
		{name: "token-prefix", requests: []string{auth("Bearer " + tok[:len(tok)-1]), auth("Bearer " + tok[:1])}, want: []outcome{bad(40102)}},
		{name: "token-suffix", requests: []string{auth("Bearer " + tok + "x"), auth("Bearer " + tok + "=")}, want: []outcome{bad(40102)}},
		{name: "token-case", requests: []string{auth("Bearer " + strings.ToUpper(tok)), auth("Bearer " + strings.ToLower(tok))}, want: []outcome{bad(40102)}},
		{name: "token-forged", requests: []string{auth("Bearer " + strings.Repeat("A", len(tok))), auth("Bearer " + forged(tok))}, want: []outcome{bad(40102)}},
		{name: "token-other-scheme", requests: []string{auth("Basic dXNlcjpwYXNz"), auth("Token " + tok), auth("Bearer\t" + tok), auth(tok), auth("Digest username=x")}, want: []outcome{bad(40103)}},
		{name: "token-list", requests: []string{auth("Bearer " + tok + ", Bearer " + tok), auth("Bearer " + tok + " " + tok), auth("Bearer " + tok + ",")}, want: []outcome{bad(40103)}},
		{name: "token-two-headers", requests: []string{auth("Bearer "+tok, "Bearer "+tok), auth("Bearer x", "Bearer "+tok)}, want: []outcome{bad(40103)}},
		{name: "token-digest-form", requests: []string{auth("Bearer sha256:" + strings.Repeat("0", 64))}, want: []outcome{bad(40103)}},
		{name: "token-in-query", requests: []string{
			request("POST /plants?access_token="+tok+" HTTP/1.1", []string{"Host: plantstore", "Content-Type: application/json", contentLength(valid(714))}, valid(714)),
			request("POST /plants?Authorization=Bearer%20"+tok+" HTTP/1.1", []string{"Host: plantstore", "Content-Type: application/json", contentLength(valid(714))}, valid(714)),
		}, want: []outcome{bad(40101)}},
		{name: "token-control-characters", requests: []string{auth("Bearer " + tok + "\x00"), auth("Bearer " + tok + "\x7f"), auth("Bearer \x01" + tok)}, want: http400},
		{name: "token-non-ascii", requests: []string{auth("Bearer " + tok + "é"), auth("Bearer\u00a0" + tok), auth("Bеarer " + tok)}, want: []outcome{bad(40103)}},
	}
}

// forged changes the token's last character: a token of the right length
// that shares everything but one byte with the valid one.
func forged(tok string) string {
	last := tok[len(tok)-1]
	if last == 'A' {
		last = 'B'
	} else {
		last = 'A'
	}
	return tok[:len(tok)-1] + string(last)
}

// result is what one request of a class got.
type result struct {
	class    string
	request  int
	outcome  outcome
	extra    int           // responses after the first: a second request was served
	duration time.Duration // from the dial to the end of the exchange
	err      error
}

// exchange sends raw on a new connection and reads every response until the
// server closes it. Unless stall, the test half-closes its side after
// writing, so that the server reads on past the request, through anything
// smuggled behind it, to the end. A server that neither answers nor closes
// within answerLimit is an error: a hang.
func exchange(addr, raw string, stall bool) (outcome, int, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return closed, 0, fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	go func() {
		// The server may answer and close before reading everything (a
		// body over the limit, an oversized header): write errors are
		// expected and the answer is what counts.
		_, _ = io.WriteString(conn, raw)
		if !stall {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(answerLimit))
	br := bufio.NewReader(conn)
	var first *outcome
	extra := 0
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				return closed, extra, fmt.Errorf("no answer and no close within %v", answerLimit)
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
				// The server closed or reset the connection: its end.
			default:
				return closed, extra, fmt.Errorf("reading a response: %w", err)
			}
			break
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode < 200 {
			continue // 100 Continue
		}
		o, err := classify(resp, body)
		if err != nil {
			return o, extra, err
		}
		if first == nil {
			first = &o
		} else {
			extra++
		}
	}
	if first == nil {
		return closed, extra, nil
	}
	return *first, extra, nil
}

// classify names a response's outcome: the service's Error body (checked
// strictly), a Plant, or net/http's own plain-text answer.
func classify(resp *http.Response, body []byte) (outcome, error) {
	o := outcome{status: resp.StatusCode, code: -1}
	if resp.Header.Get("Content-Type") != "application/json" {
		return o, nil
	}
	if resp.StatusCode == http.StatusOK {
		o.code = 0
		return o, nil
	}
	code, err := servicetest.Reply{Status: resp.StatusCode, Header: resp.Header, Body: body}.Code()
	if err != nil {
		return o, err
	}
	o.code = code
	return o, nil
}

// TestChaosHostileInput starts redis-server and the service with short read
// timeouts, sends every class of hostile input over raw TCP, several at a
// time, and asserts for each request an allowed outcome (the contract's
// Error body, or net/http's own refusal of malformed HTTP, or a closed
// connection), no 5xx, no second response on one connection (nothing
// smuggled was served), no hang; then that Redis holds nothing but what the
// contract accepts, that the process is alive, /livez answers and a normal
// create still works. Full mode sends every request of every class ten
// times, with a 4 MiB header line instead of 1 MiB.
func TestChaosHostileInput(t *testing.T) {
	redis := redistest.Start(t)
	rdb := redis.Client()
	s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: []string{
		"--http-read-header-timeout", readHeaderTimeout.String(), "--http-read-timeout", readTimeout.String(),
	}})
	addr := strings.TrimPrefix(s.API, "http://")
	ctx := context.Background()
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("Redis holds %d keys before the scenario (%v)", n, err)
	}

	e := &env{token: s.Token, big: servicetest.Pick(1<<20, 4<<20)}
	repeat := servicetest.Pick(1, 10)
	classes := e.classes()
	if len(classes) < 40 {
		t.Fatalf("%d classes, want at least 40", len(classes))
	}
	allowedKeys := map[string]bool{}
	type job struct {
		c     class
		index int
		raw   string
	}
	var jobs []job
	for range repeat {
		for _, c := range classes {
			if c.stores != "" {
				allowedKeys[c.stores] = true
				allowedKeys[store.PlantIndexKey("plantstore:", 0)] = true // its listing index
			}
			for i, raw := range c.requests {
				jobs = append(jobs, job{c, i, raw})
			}
		}
	}

	start := time.Now()
	results := make([]result, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for n, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			began := time.Now()
			o, extra, err := exchange(addr, j.raw, j.c.stall)
			results[n] = result{class: j.c.name, request: j.index, outcome: o, extra: extra, duration: time.Since(began), err: err}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	byClass := map[string]class{}
	for _, c := range classes {
		byClass[c.name] = c
	}
	byOutcome := map[string]int{}
	errorsByStatus := map[int]int{}
	closedCount, fiveXX := 0, 0
	var stallCut time.Duration
	for _, r := range results {
		c := byClass[r.class]
		byOutcome[r.outcome.String()]++
		switch {
		case r.outcome.status == 0:
			closedCount++
		case r.outcome.status != http.StatusOK:
			errorsByStatus[r.outcome.status]++
		}
		if r.outcome.status >= 500 {
			fiveXX++
		}
		if c.stall {
			stallCut = max(stallCut, r.duration)
		}
		if r.err != nil {
			t.Errorf("%s #%d: %v", r.class, r.request, r.err)
			continue
		}
		if !slices.Contains(c.want, r.outcome) {
			t.Errorf("%s #%d: got %v, want one of %v", r.class, r.request, r.outcome, c.want)
		}
		if r.extra > 0 {
			t.Errorf("%s #%d: %d more responses on the connection: a request hidden in it was served", r.class, r.request, r.extra)
		}
	}
	if fiveXX > 0 {
		t.Errorf("%d responses were 5xx", fiveXX)
	}

	// Nothing stored but what the contract accepts; no smuggled create.
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, k := range keys {
		if !allowedKeys[k] {
			stored++
			t.Errorf("Redis holds %s after hostile input", k)
		}
	}

	// Still alive and serving.
	select {
	case <-s.Exited():
		t.Fatalf("the service exited:\n%s", s.Logs)
	default:
	}
	resp, err := servicetest.Client.Get(s.Admin + "/livez")
	if err != nil {
		t.Fatalf("/livez: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/livez = %d", resp.StatusCode)
	}
	if r := s.Post(t, `{"id": 42, "name": "Monstera", "tag": "after"}`); r.Status != http.StatusOK || string(r.Body) != `{"name":"Monstera","tag":"after"}`+"\n" {
		t.Errorf("a normal create after the hostile input: %d %s", r.Status, r.Body)
	}
	if v, err := rdb.Get(ctx, store.PlantKey("plantstore:", 42)).Result(); err != nil || v != `{"name":"Monstera","tag":"after"}` {
		t.Errorf("plant 42 in Redis: %q, %v", v, err)
	}
	for _, line := range s.Logs.All() {
		if strings.Contains(line, "panic") {
			t.Errorf("the log has a panic: %s", line)
		}
	}
	if t.Failed() {
		t.Logf("outcomes: %v", byOutcome)
		t.Logf("service log:\n%s", s.Logs)
	}

	statuses := make([]int, 0, len(errorsByStatus))
	for st := range errorsByStatus {
		statuses = append(statuses, st)
	}
	sort.Ints(statuses)
	var ebs []string
	for _, st := range statuses {
		ebs = append(ebs, fmt.Sprintf("%d:%d", st, errorsByStatus[st]))
	}
	servicetest.Report(t, "hostile", "classes=%d requests=%d errors-by-status=%s closed=%d stored=%d 5xx=%d accepted-by-contract=%d stall-cut-max=%dms elapsed=%.1fs",
		len(classes), len(results), strings.Join(ebs, ","), closedCount, stored, fiveXX, byOutcome["200"], stallCut.Milliseconds(), elapsed.Seconds())
}
