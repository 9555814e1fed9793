package servicetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Client is the HTTP client of Do, Post and the admin helpers.
var Client = &http.Client{Timeout: 10 * time.Second}

// Reply is a read HTTP response.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// errorBody is the contract's Error.
type errorBody struct {
	Error   *int32  `json:"error"`
	Message *string `json:"message"`
}

// Do sends a request to the API with the service's token; header values of
// "" delete the header.
func (s *Service) Do(t testing.TB, method, path, body string, header map[string]string) Reply {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.API+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.Token)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Post creates a plant with the service's token.
func (s *Service) Post(t testing.TB, body string) Reply {
	t.Helper()
	return s.Do(t, http.MethodPost, "/plants", body, nil)
}

// ErrorCode checks r is a well-formed Error body and returns its code.
func (r Reply) ErrorCode(t testing.TB) int32 {
	t.Helper()
	code, err := r.Code()
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// Code is ErrorCode for callers that are not a test's goroutine.
func (r Reply) Code() (int32, error) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return 0, fmt.Errorf("status %d: Content-Type %q, want application/json; body %s", r.Status, ct, r.Body)
	}
	var e errorBody
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return 0, fmt.Errorf("status %d: body is not an Error: %v: %s", r.Status, err, r.Body)
	}
	if e.Error == nil || e.Message == nil || *e.Message == "" {
		return 0, fmt.Errorf("status %d: Error body lacks error or message: %s", r.Status, r.Body)
	}
	if int(*e.Error)/100 != r.Status {
		return 0, fmt.Errorf("error code %d does not match status %d", *e.Error, r.Status)
	}
	return *e.Error, nil
}

// Ready asks the admin /readyz once and returns its status.
func (s *Service) Ready() (int, error) {
	return s.adminStatus("/readyz")
}

func (s *Service) adminStatus(path string) (int, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(s.Admin + path)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}
