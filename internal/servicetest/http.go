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

	"github.com/plantstore/plantstore/api/client"
	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/store/storetest"
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

// Caller is a client of the service's resource routes for a contended
// history (storetest.Contend): each answer read as the contract's model
// tells answers apart. Each Caller has connections of its own, as separate
// clients would; the bodies are the API's own types (api/client).
func (s *Service) Caller() storetest.Caller {
	return httpCaller{s: s, client: &http.Client{}}
}

type httpCaller struct {
	s      *Service
	client *http.Client
}

func (c httpCaller) Do(ctx context.Context, in storetest.Input) storetest.Output {
	method, path, body := http.MethodGet, fmt.Sprintf("/plants/%d", in.ID), ""
	switch in.Kind {
	case storetest.OpCreate:
		b, _ := json.Marshal(client.NewPlant{Id: in.Plant.ID, Name: in.Plant.Name, Tag: in.Plant.Tag})
		method, path, body = http.MethodPost, "/plants", string(b)
	case storetest.OpDelete:
		method = http.MethodDelete
	case storetest.OpList:
		path = fmt.Sprintf("/plants?limit=%d", plant.MaxPageLimit)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.s.API+path, strings.NewReader(body))
	if err != nil {
		return storetest.Output{Unexpected: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+c.s.Token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return storetest.Output{} // no answer: indeterminate
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(resp.Body)
	if err != nil {
		return storetest.Output{}
	}
	unexpected := storetest.Output{Unexpected: fmt.Sprintf("%s %s: %d %s", method, path, resp.StatusCode, reply)}
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		return storetest.Output{}
	case in.Kind == storetest.OpCreate && resp.StatusCode == http.StatusOK:
		var got client.Plant
		if json.Unmarshal(reply, &got) != nil || !in.Plant.SameContent(plant.Plant{Name: got.Name, Tag: got.Tag}) {
			return unexpected // a 200 answers the plant as stored (name and tag): the one sent
		}
		return storetest.Output{Result: storetest.Stored}
	case in.Kind == storetest.OpCreate && resp.StatusCode == http.StatusConflict:
		return storetest.Output{Result: storetest.Conflict}
	case in.Kind == storetest.OpRead && resp.StatusCode == http.StatusOK:
		var got client.StoredPlant
		if json.Unmarshal(reply, &got) != nil || got.Id != in.ID {
			return unexpected
		}
		return storetest.Output{Result: storetest.Found, Plant: plant.Plant{ID: got.Id, Name: got.Name, Tag: got.Tag}}
	case in.Kind == storetest.OpDelete && resp.StatusCode == http.StatusNoContent:
		return storetest.Output{Result: storetest.Deleted}
	case (in.Kind == storetest.OpRead || in.Kind == storetest.OpDelete) && resp.StatusCode == http.StatusNotFound:
		return storetest.Output{Result: storetest.NotFound}
	case in.Kind == storetest.OpList && resp.StatusCode == http.StatusOK:
		var page []client.StoredPlant
		if json.Unmarshal(reply, &page) != nil {
			return unexpected
		}
		if resp.Header.Get("Link") != "" {
			return storetest.Output{} // more than one page: no complete view
		}
		out := storetest.Output{Result: storetest.Found, Page: map[int64]plant.Plant{}}
		for _, p := range page {
			out.Page[p.Id] = plant.Plant{ID: p.Id, Name: p.Name, Tag: p.Tag}
		}
		return out
	}
	return unexpected
}
