package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/plant"
)

// FuzzDecodeNewPlant checks the strict decoder against the contract on any
// input. A reference reading, written apart from decode.go from
// encoding/json's tokenizer, math/big and a hand-written string decoder,
// says whether the contract accepts the body and with which code it refuses
// it; the decoder must agree exactly: the same plant, or the same 400xx code
// (for bodies that are not valid JSON, where the first problem met may be a
// syntax error, a duplicate or a case variant, one of those three). Besides:
// no panic, a short non-empty message that does not depend on the body's
// size, the input left unchanged, and an accepted body is read by
// encoding/json as the same plant and survives a round trip.
func FuzzDecodeNewPlant(f *testing.F) {
	seeds := []string{
		`{"id":1,"name":"Monstera"}`,
		`{"id":10,"name":"Monstera deliciosa","tag":"tropical"}`,
		`{"id":1,"name":"a","tag":null}`,
		`{"id":1,"name":"a","tag":""}`,
		`{"id":-9223372036854775808,"name":"a"}`,
		`{"id":9223372036854775807,"name":"a"}`,
		`{"id":9223372036854775808,"name":"a"}`,
		`{"id":-9223372036854775809,"name":"a"}`,
		`{"id":1e400,"name":"a"}`,
		`{"id":-0,"name":"a"}`,
		`{"id":1.0,"name":"a"}`,
		`{"id":1e3,"name":"a"}`,
		`{"id":01,"name":"a"}`,
		`{"id":0x10,"name":"a"}`,
		`{"id":"1","name":"a"}`,
		`{"id":null,"name":"a"}`,
		`{"id":1,"name":null}`,
		`{"id":1,"name":["a"]}`,
		`{"id":1,"name":"a","tag":{}}`,
		`{"id":1,"name":"a","id":1}`,
		`{"id":1,"name":"a","NAME":"b"}`,
		`{"ID":1,"name":"a"}`,
		`{"id":1,"name":"a","extra":{"id":2,"name":"b","x":[1,{"y":null}]}}`,
		`{"id":1,"name":"\ud83c\udf31"}`,
		`{"id":1,"name":"\ud800"}`,
		`{"id":1,"name":"\ud800\ud800"}`,
		`{"id":1,"name":"\udc00\ud800"}`,
		`{"id":1,"name":"a\u0000b"}`,
		`{"id":1,"name":"Rose \u0026 <Ivy>","tag":"\"q\" \\ \/ \b\f\n\r\t"}`,
		"{\"id\":1,\"name\":\"a\x7f\u0085\"}",
		"{\"id\":1,\"name\":\"\xff\"}",
		"{\"id\":1,\"name\":\"a\x00\"}",
		"\xef\xbb\xbf{\"id\":1,\"name\":\"a\"}",
		`{"id":1,"name":"a"} {"id":2,"name":"b"}`,
		`{"id":1,"name":"a"}` + " \n\t",
		`{"id":1,"name":"a"}]`,
		`[{"id":1,"name":"a"}]`,
		``,
		` `,
		`null`,
		`1`,
		`"x"`,
		`{"id":1,"name":"` + strings.Repeat("🌱", 200) + `"}`,
		`{"id":1,"name":"` + strings.Repeat("🌱", 201) + `"}`,
		`{"id":1,"name":"a","tag":"` + strings.Repeat("t", 101) + `"}`,
		`{"\u0069d":1,"name":"a"}`,
		`{"\u0069d":1,"id":2,"name":"a"}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"id":1,"name":"a","a":0}`,
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
		`{"id":1,"name":"a","x":` + strings.Repeat(`{"a":`, 500) + `1` + strings.Repeat(`}`, 500) + `}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		input := bytes.Clone(body)
		p, e := httpapi.DecodeNewPlant(body)
		if !bytes.Equal(body, input) {
			t.Fatalf("DecodeNewPlant changed its input %q to %q", input, body)
		}
		want := referenceDecode(body)

		if e != nil {
			if e.Code < apierror.MalformedJSON || e.Code > apierror.CaseVariantKey {
				t.Fatalf("%q: error code %d is not one of 40001..40007 (%s)", body, e.Code, e.Message)
			}
			if strings.TrimSpace(e.Message) == "" || len(e.Message) > 512 || !utf8.ValidString(e.Message) {
				t.Fatalf("%q: error %d has an empty, overlong or invalid message %q", body, e.Code, e.Message)
			}
			if p.ID != 0 || p.Name != "" || p.Tag != nil {
				t.Fatalf("%q: a failure returned the plant %+v", body, p)
			}
			if want.accepted() {
				t.Fatalf("%q: refused with %d (%s); the contract accepts it as %+v (tag %v)", body, e.Code, e.Message, want.p, deref(want.p.Tag))
			}
			if !want.allows(e.Code) {
				t.Fatalf("%q: refused with %d (%s); the contract says %v", body, e.Code, e.Message, want.codes)
			}
			return
		}
		if !want.accepted() {
			t.Fatalf("%q: accepted as %+v (tag %v); the contract refuses it with %v", body, p, deref(p.Tag), want.codes)
		}
		if p.ID != want.p.ID || !p.SameContent(want.p) {
			t.Fatalf("%q: decoded %+v (tag %v); the contract reads %+v (tag %v)", body, p, deref(p.Tag), want.p, deref(want.p.Tag))
		}
		if err := plant.Validate(p); err != nil {
			t.Fatalf("decoded plant %+v is not valid: %v", p, err)
		}

		// Round trip: encoding/json writes the plant, the decoder reads it back.
		again, err := json.Marshal(struct {
			ID   int64   `json:"id"`
			Name string  `json:"name"`
			Tag  *string `json:"tag"`
		}{p.ID, p.Name, p.Tag})
		if err != nil {
			t.Fatalf("encoding %+v: %v", p, err)
		}
		q, e := httpapi.DecodeNewPlant(again)
		if e != nil {
			t.Fatalf("re-encoded plant %s does not decode: %d %s", again, e.Code, e.Message)
		}
		if q.ID != p.ID || !q.SameContent(p) {
			t.Fatalf("round trip changed the plant: %+v (tag %v) -> %s -> %+v (tag %v)", p, deref(p.Tag), again, q, deref(q.Tag))
		}

		// Two parsers agree: encoding/json reads the same id, name and tag
		// from the body the strict decoder accepted.
		var other struct {
			ID   int64   `json:"id"`
			Name string  `json:"name"`
			Tag  *string `json:"tag"`
		}
		if err := json.Unmarshal(body, &other); err != nil {
			t.Fatalf("encoding/json rejects %q, which DecodeNewPlant accepted as %+v: %v", body, p, err)
		}
		if other.ID != p.ID || other.Name != p.Name {
			t.Fatalf("parsers disagree on %q: DecodeNewPlant id %d name %q, encoding/json id %d name %q",
				body, p.ID, p.Name, other.ID, other.Name)
		}
		if !tagEqual(other.Tag, p.Tag) {
			t.Fatalf("parsers disagree on the tag of %q: DecodeNewPlant %v, encoding/json %v", body, deref(p.Tag), deref(other.Tag))
		}
	})
}

// verdict is the contract's reading of a body: a plant, or the codes it may
// be refused with.
type verdict struct {
	p     plant.Plant
	codes []apierror.Code // empty: accepted
}

func (v verdict) accepted() bool { return len(v.codes) == 0 }

func (v verdict) allows(c apierror.Code) bool {
	for _, w := range v.codes {
		if w == c {
			return true
		}
	}
	return false
}

func refuse(codes ...apierror.Code) verdict { return verdict{codes: codes} }

// referenceDecode reads a body by the contract's rules (contract.md section
// 2 and the README's error table), in the order a reader meets problems:
// the body as a whole, then each key in turn, then id, name and tag's types,
// then name and tag's characters and lengths.
func referenceDecode(body []byte) verdict {
	if len(bytes.TrimSpace(body)) == 0 || !utf8.Valid(body) {
		return refuse(apierror.MalformedJSON)
	}
	if !json.Valid(body) {
		// Which problem comes first depends on where the syntax error is.
		return refuse(apierror.MalformedJSON, apierror.DuplicateKey, apierror.CaseVariantKey)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return refuse(apierror.MalformedJSON)
	}
	seen := map[string]bool{}
	values := map[string]json.RawMessage{}
	for dec.More() {
		tok, _ := dec.Token()
		key := tok.(string)
		if seen[key] {
			return refuse(apierror.DuplicateKey)
		}
		seen[key] = true
		for _, field := range []string{"id", "name", "tag"} {
			if key != field && strings.EqualFold(key, field) {
				return refuse(apierror.CaseVariantKey)
			}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			panic(err) // json.Valid said the body is valid
		}
		values[key] = raw
	}

	var p plant.Plant
	id, ok := values["id"]
	switch {
	case !ok:
		return refuse(apierror.MissingField)
	case !isNumber(id) || bytes.ContainsAny(id, ".eE"):
		return refuse(apierror.WrongType)
	}
	n, _ := new(big.Int).SetString(string(id), 10)
	if n == nil || !n.IsInt64() {
		return refuse(apierror.OutOfRange)
	}
	p.ID = n.Int64()

	name, ok := values["name"]
	switch {
	case !ok:
		return refuse(apierror.MissingField)
	case name[0] != '"':
		return refuse(apierror.WrongType)
	}
	if p.Name, ok = unquote(name); !ok {
		return refuse(apierror.BadCharacters)
	}
	if tag, present := values["tag"]; present && string(tag) != "null" {
		if tag[0] != '"' {
			return refuse(apierror.WrongType)
		}
		s, ok := unquote(tag)
		if !ok {
			return refuse(apierror.BadCharacters)
		}
		p.Tag = &s
	}
	if c := textProblem(p.Name, 1, 200); c != 0 {
		return refuse(c)
	}
	if p.Tag != nil {
		if c := textProblem(*p.Tag, 0, 100); c != 0 {
			return refuse(c)
		}
	}
	return verdict{p: p}
}

func isNumber(raw []byte) bool { return raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9' }

// textProblem applies the character and length rules to a field's text.
func textProblem(s string, lo, hi int) apierror.Code {
	n := 0
	for _, r := range s {
		if unicode.Is(unicode.Cc, r) {
			return apierror.BadCharacters
		}
		n++
	}
	if n < lo || n > hi {
		return apierror.OutOfRange
	}
	return 0
}

// unquote decodes a valid JSON string literal, UTF-16 escapes included, and
// reports false for an unpaired surrogate, which encoding/json would turn
// into U+FFFD. It cross-checks its result against encoding/json.
func unquote(raw []byte) (string, bool) {
	var sb strings.Builder
	high := rune(-1) // a high surrogate waiting for its low half
	s := raw[1 : len(raw)-1]
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			if high >= 0 {
				return "", false
			}
			_, size := utf8.DecodeRune(s[i:])
			sb.Write(s[i : i+size])
			i += size
			continue
		}
		if s[i+1] != 'u' {
			if high >= 0 {
				return "", false
			}
			sb.WriteByte(map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[s[i+1]])
			i += 2
			continue
		}
		v, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 16)
		if err != nil {
			panic(err) // json.Valid said the literal is valid
		}
		i += 6
		r := rune(v)
		switch {
		case 0xD800 <= r && r < 0xDC00:
			if high >= 0 {
				return "", false
			}
			high = r
		case 0xDC00 <= r && r < 0xE000:
			if high < 0 {
				return "", false
			}
			sb.WriteRune(utf16.DecodeRune(high, r))
			high = -1
		default:
			if high >= 0 {
				return "", false
			}
			sb.WriteRune(r)
		}
	}
	if high >= 0 {
		return "", false
	}
	var std string
	if err := json.Unmarshal(raw, &std); err != nil || std != sb.String() {
		panic("the reference string decoder disagrees with encoding/json on " + string(raw))
	}
	return sb.String(), true
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// FuzzRequest sends whole requests through the router, the real bearer
// middleware and the create handler over a store that records its calls.
// The request is written as raw HTTP/1.1 text from the fuzzed method, target,
// Content-Type, Authorization and body, and read back with net/http's own
// parser, so header injection (a second Content-Length, Transfer-Encoding,
// a second Authorization) reaches the service as a server would pass it on;
// what net/http refuses never reaches the router. Properties: no panic and
// no 5xx; every failure is an Error body whose code matches its status, with
// the challenge on 401 and Allow on 405; the create handler answers only
// requests that carry exactly one header "Bearer <the token>"; the store is
// called at most once, only for a 200, and with exactly the plant the
// decoder reads from the bytes the handler was given; a 200 body is that
// plant.
func FuzzRequest(f *testing.F) {
	const token = "fuzz-T0ken_~+/="
	good := "Bearer " + token
	for _, s := range []struct{ method, target, contentType, authorization, body string }{
		{"POST", "/plants", "application/json", good, `{"id":1,"name":"Monstera","tag":"x"}`},
		{"POST", "/plants", "application/json; charset=UTF-8", "bearer  " + token, `{"id":-0,"name":"a","tag":null}`},
		{"POST", "/plants", "application/json", good, `{"id":1,"name":"a","Name":"b"}`},
		{"POST", "/plants", "text/plain", good, `{"id":1,"name":"a"}`},
		{"POST", "/plants", "", good, `{"id":1,"name":"a"}`},
		{"POST", "/plants", "application/json", "", `{"id":1,"name":"a"}`},
		{"POST", "/plants", "application/json", "Basic eDp5", `{"id":1,"name":"a"}`},
		{"POST", "/plants", "application/json", "Bearer wrong", `{"id":1,"name":"a"}`},
		{"POST", "/plants", "application/json", good + "\r\nAuthorization: " + good, `{"id":1,"name":"a"}`},
		{"POST", "/plants", "application/json\r\nTransfer-Encoding: chunked", good, `{"id":1,"name":"a"}`},
		{"POST", "/plants", "application/json\r\nContent-Length: 3", good, `{"id":1,"name":"a"}`},
		{"POST", "/plants?token=" + token, "application/json", "", `{"id":1,"name":"a"}`},
		{"POST", "/plants/", "application/json", good, `{"id":1,"name":"a"}`},
		{"POST", "//plants", "application/json", good, `{"id":1,"name":"a"}`},
		{"POST", "/plants/../plants", "application/json", good, `{"id":1,"name":"a"}`},
		{"POST", "/%70lants", "application/json", good, `{"id":1,"name":"a"}`},
		{"POST", "http://plantstore/plants", "application/json", good, `{"id":1,"name":"a"}`},
		{"GET", "/plants", "", good, ``},
		{"TRACE", "/plants", "", good, ``},
		{"GET", "/openapi.yaml", "", "", ``},
		{"HEAD", "/openapi.yaml", "", "", ``},
		{"POST", "/plants", "application/json", good, `{"id":1,"name":"` + strings.Repeat("a", 70000) + `"}`},
	} {
		f.Add(s.method, s.target, s.contentType, s.authorization, []byte(s.body))
	}
	// Creates are recorded; reads, lists and deletes reach an empty store.
	store := &fakeStore{memory: newMemory()}
	handler := httpapi.NewRouter(httpapi.RouterParams{
		CreatePlant:  httpapi.NewCreatePlantHandler(store, time.Second, zap.NewNop(), nil),
		ListPlants:   httpapi.NewListPlantsHandler(store.memory, time.Second, zap.NewNop()),
		GetPlant:     httpapi.NewGetPlantHandler(store.memory, time.Second, zap.NewNop()),
		DeletePlant:  httpapi.NewDeletePlantHandler(store.memory, time.Second, zap.NewNop()),
		OpenAPI:      httpapi.NewOpenAPIHandler(api.OpenAPI),
		Authenticate: auth.Middleware(auth.NewKeyring(auth.NewTokenSet(token)), nil),
	})
	bearer := regexp.MustCompile(`^[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*)$`)
	f.Fuzz(func(t *testing.T, method, target, contentType, authorization string, body []byte) {
		var raw bytes.Buffer
		raw.WriteString(method + " " + target + " HTTP/1.1\r\nHost: plantstore\r\n")
		if authorization != "" {
			raw.WriteString("Authorization: " + authorization + "\r\n")
		}
		if contentType != "" {
			raw.WriteString("Content-Type: " + contentType + "\r\n")
		}
		raw.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
		raw.Write(body)
		req, err := http.ReadRequest(bufio.NewReader(&raw))
		if err != nil {
			return // net/http answers 400 itself; the router never sees the request
		}
		var given bytes.Buffer
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(req.Body, &given), req.Body}
		store.mu.Lock()
		store.calls = store.calls[:0]
		store.mu.Unlock()

		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		calls := store.Calls()
		values := req.Header.Values("Authorization")
		m := bearer.FindStringSubmatch(strings.Join(values, "\n"))
		authorized := len(values) == 1 && m != nil && m[1] == token

		switch rec.Code {
		case http.StatusOK:
			if req.Method == http.MethodGet || req.Method == http.MethodHead {
				if len(calls) != 0 {
					t.Fatalf("%s %q stored %v", req.Method, target, calls)
				}
				return // the OpenAPI document
			}
			if !authorized || len(calls) != 1 {
				t.Fatalf("%s %q with Authorization %q: 200 with %d store calls", req.Method, target, values, len(calls))
			}
			p, e := httpapi.DecodeNewPlant(given.Bytes())
			if e != nil || p.ID != calls[0].ID || !p.SameContent(calls[0]) {
				t.Fatalf("stored %+v, but the body %q decodes to %+v, %v", calls[0], given.Bytes(), p, e)
			}
			// The service does not escape HTML characters ("Rose & Ivy"
			// comes back as sent), which json.Marshal would.
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(struct {
				Name string  `json:"name"`
				Tag  *string `json:"tag,omitempty"`
			}{p.Name, p.Tag})
			if got := rec.Body.Bytes(); !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("200 body %s, want %s", got, want.Bytes())
			}
			return
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
			if !authorized {
				t.Fatalf("%s %q with Authorization %q reached the create handler: %d %s", req.Method, target, values, rec.Code, rec.Body)
			}
		case http.StatusUnauthorized:
			if authorized {
				t.Fatalf("%s %q: the right token %q was refused: %s", req.Method, target, values, rec.Body)
			}
			if !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), `Bearer realm="plantstore"`) {
				t.Fatalf("401 without the challenge")
			}
		case http.StatusNotFound:
		case http.StatusMethodNotAllowed:
			if rec.Header().Get("Allow") == "" {
				t.Fatalf("%s %q: 405 without Allow", req.Method, target)
			}
		default:
			t.Fatalf("%s %q: status %d: %s", req.Method, target, rec.Code, rec.Body)
		}
		if len(calls) != 0 {
			t.Fatalf("%s %q: status %d, yet the store was called with %v", req.Method, target, rec.Code, calls)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%d with Content-Type %q", rec.Code, ct)
		}
		var e struct {
			Error   *int    `json:"error"`
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == nil || e.Message == nil || *e.Message == "" || *e.Error/100 != rec.Code {
			t.Fatalf("%d: not an Error body with a matching code: %s", rec.Code, rec.Body)
		}
		if len(token) > 0 && strings.Contains(rec.Body.String(), token) {
			t.Fatalf("the token appears in the response %s", rec.Body)
		}
	})
}
