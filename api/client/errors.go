package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The error codes of the contract a caller is likely to branch on (the
// table of docs/api.md lists them all; errors_test.go checks these against
// the service's).
const (
	CodeConflict            int32 = 40901 // the id is taken by a different plant
	CodePlantNotFound       int32 = 40402 // no plant has that id
	CodeTokenNotAccepted    int32 = 40102 // the token is unknown or expired
	CodeInsufficientScope   int32 = 40301 // the token lacks the scope (plants:read, plants:write) the operation needs
	CodeNoClient            int32 = 40302 // a valid JWT whose identity no client is mapped to
	CodeRateLimited         int32 = 42901 // the client's rate limit is exhausted; retry after Retry-After
	CodeStoreUnavailable    int32 = 50301 // the store did not answer in time; retry after Retry-After
	CodeIssuerUnavailable   int32 = 50302 // a JWT's issuer cannot be reached, none of its keys cached; retry after Retry-After
	CodeStoreFull           int32 = 50701 // the store is full: nothing stored; retrying does not help until an operator acts
	CodeInvalidPageLimit    int32 = 40008 // limit not from 1 to 100
	CodeCursorNotRecognised int32 = 40009 // a cursor the service did not issue
)

// APIError is a failure the service answered: its HTTP status and the
// contract's Error body. Match it with errors.As:
//
//	var e *client.APIError
//	if errors.As(err, &e) && e.Code == client.CodePlantNotFound { ... }
type APIError struct {
	Status  int    // HTTP status
	Code    int32  // the Error body's code (status*100 + detail); 0 when the body was not an Error (a proxy's page, say)
	Message string // the Error body's message; the start of the body when it was not an Error
	// RetryAfter is the answer's Retry-After (503 and 429), zero when it
	// had none. When it is set after the client's retries, the service
	// asked for a longer wait than the client was allowed, or the retries
	// ran out.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plantstore answered %d", e.Status)
	if e.Code != 0 {
		fmt.Fprintf(&b, " (error %d)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %s", e.RetryAfter)
	}
	return b.String()
}

// newAPIError reads a failure from its response and body.
func newAPIError(resp *http.Response, body []byte) *APIError {
	e := &APIError{Status: resp.StatusCode}
	e.RetryAfter, _ = retryAfter(resp.Header, time.Now())
	var v struct {
		Error   *int32  `json:"error"`
		Message *string `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil && v.Error != nil && v.Message != nil {
		e.Code, e.Message = *v.Error, *v.Message
		return e
	}
	// Not an Error body: keep a printable start of it for the person reading.
	text := bytes.TrimSpace(body)
	if len(text) > 200 {
		text = text[:200]
	}
	if utf8.Valid(text) {
		e.Message = string(text)
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// retryAfter reads Retry-After (RFC 9110 section 10.2.3): delay-seconds or
// an HTTP-date, counted from now. ok is false when it is absent or not
// either form.
func retryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}
