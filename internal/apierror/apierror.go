// Package apierror is the one place that writes the contract's Error body
// ({"error": <int32>, "message": "..."}) and defines its stable codes, so that
// every failure of the API, whichever layer detects it, looks the same.
package apierror

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// Code is a stable error value: the HTTP status times 100 plus a detail.
type Code int32

// The codes of the contract. A code never changes meaning once released;
// All says what each means, for the API reference.
const (
	MalformedJSON      Code = 40001
	MissingField       Code = 40002
	WrongType          Code = 40003
	OutOfRange         Code = 40004
	DuplicateKey       Code = 40005
	BadCharacters      Code = 40006
	CaseVariantKey     Code = 40007
	BadLimit           Code = 40008
	BadCursor          Code = 40009
	CredentialsMissing Code = 40101
	TokenRejected      Code = 40102
	MalformedAuth      Code = 40103
	InsufficientScope  Code = 40301
	NoClient           Code = 40302
	NotFound           Code = 40401
	PlantNotFound      Code = 40402
	MethodNotAllowed   Code = 40501
	IDTaken            Code = 40901
	BodyTooLarge       Code = 41301
	UnsupportedMedia   Code = 41501
	RateLimited        Code = 42901
	Internal           Code = 50001
	StoreUnavailable   Code = 50301
	IssuerUnavailable  Code = 50302
	StoreFull          Code = 50701
)

// Status is the HTTP status a code is sent with.
func (c Code) Status() int { return int(c) / 100 }

// Described is a code with its meaning for a person reading the API
// reference (Markdown: `code` spans).
type Described struct {
	Code    Code
	Meaning string
}

// All lists every code in ascending order with its meaning: the error
// tables of docs/api.md and of the served OpenAPI document are checked
// against it.
func All() []Described {
	return []Described{
		{MalformedJSON, "malformed JSON: empty body, not valid JSON, not a single object, content after the object, invalid UTF-8"},
		{MissingField, "required field missing (`id`, `name`)"},
		{WrongType, "field of the wrong type (`id` not an integer literal, e.g. a string, fraction, exponent or null; `name`/`tag` not a string); the `{id}` of a path not a canonical decimal integer"},
		{OutOfRange, "value out of range or too long (`id` outside int64; `name` not 1–200 code points; `tag` over 100 code points); the `{id}` of a path outside int64"},
		{DuplicateKey, "duplicate key in the object"},
		{BadCharacters, "forbidden characters: a control character or an invalid Unicode escape (lone surrogate) in `name` or `tag`"},
		{CaseVariantKey, "case variant of a field name (`ID`, `Name`, `TAG`, ...): field names are case-sensitive, and parsers that match keys case-insensitively would read the body differently"},
		{BadLimit, "`limit` of `GET /plants` not an integer from 1 to 100"},
		{BadCursor, "`cursor` of `GET /plants` not one the service issued"},
		{CredentialsMissing, "credentials missing: no Authorization header"},
		{TokenRejected, "token not accepted (unknown or expired; a JWT that fails verification, the message saying which check)"},
		{MalformedAuth, "malformed Authorization header (not `Bearer <token>`)"},
		{InsufficientScope, "the token lacks the scope the operation needs (`plants:read` or `plants:write`)"},
		{NoClient, "a valid JWT whose identity no client is mapped to (an operator adds an identity line to the tokens file)"},
		{NotFound, "unknown path"},
		{PlantNotFound, "no plant has that id"},
		{MethodNotAllowed, "method not allowed on a known path"},
		{IDTaken, "id already taken by a different plant"},
		{BodyTooLarge, "body larger than 64 KiB"},
		{UnsupportedMedia, "content type is not application/json"},
		{RateLimited, "the client's rate limit is exhausted; retry after Retry-After"},
		{Internal, "internal error (the message reveals nothing internal)"},
		{StoreUnavailable, "store unavailable or timed out; retry after Retry-After"},
		{IssuerUnavailable, "the JWT's issuer cannot be reached and none of its keys are cached; retry after Retry-After"},
		{StoreFull, "the store is full (out of memory, evicting nothing): nothing was stored, and retrying does not help until an operator frees memory or raises its limit; reads, lists and deletes keep working"},
	}
}

// Error is a failure to report to the client. Message must help a person fix
// the request and must never carry internal detail or a credential.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return strconv.Itoa(int(e.Code)) + ": " + e.Message }

// New returns an *Error with the given code and message.
func New(code Code, message string) *Error { return &Error{Code: code, Message: message} }

type body struct {
	Error   int32  `json:"error"`
	Message string `json:"message"`
}

// Write sends e as the contract's Error body with the status its code implies.
// Headers a status needs (Allow, Retry-After, WWW-Authenticate) are the
// caller's to set before calling Write.
func Write(w http.ResponseWriter, e *Error) {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Code.Status())
	}
	WriteJSON(w, e.Code.Status(), body{Error: int32(e.Code), Message: msg})
}

// Header values shared by every response. They are never modified: net/http
// only reads header values.
var (
	headerJSON    = []string{"application/json"}
	headerNosniff = []string{"nosniff"}
	headerNoStore = []string{"no-store"}
)

// WriteJSON sends v as a JSON response. HTML characters are not escaped: the
// body is JSON for API clients, and names such as "Rose & Ivy" come back as
// sent.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	e := encoders.Get().(*encoder)
	defer e.put()
	buf := &e.buf
	if err := e.enc.Encode(v); err != nil {
		// Only a value that cannot be JSON gets here: a bug, not a request problem.
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":50001,"message":"internal error"}` + "\n")
	}
	h := w.Header()
	// Canonical keys set directly: http.Header.Set would canonicalise each
	// and allocate a new slice for values that never change.
	h["Content-Type"] = headerJSON
	h["X-Content-Type-Options"] = headerNosniff
	h["Cache-Control"] = headerNoStore
	h["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes()) // copied: the buffer goes back to the pool
}

// encoder is a response body's buffer and its encoder, reused across
// responses: three allocations fewer on every answer.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooled bounds the buffers kept for reuse: a rare large page does not
// pin its buffer.
const maxPooled = 64 << 10

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

func (e *encoder) put() {
	if e.buf.Cap() > maxPooled {
		return
	}
	e.buf.Reset()
	encoders.Put(e)
}
