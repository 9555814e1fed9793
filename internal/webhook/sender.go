package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/plantstore/plantstore/internal/store"
)

// maxResponseBytes is as much of a subscriber's answer as is read (and
// thrown away, so the connection can be reused); the rest is not read.
const maxResponseBytes = 64 << 10

// Sender POSTs signed events to subscribers: through the guard, no proxy,
// no redirect followed (a 3xx is not a 2xx, so it is retried), every
// request bounded by a timeout, every answer by maxResponseBytes.
type Sender struct {
	client    *http.Client
	userAgent string
}

// NewSender returns a sender whose connections the guard vets, resolving
// names with resolver (nil: the system's), each delivery bounded by
// timeout, keeping up to idlePerHost idle connections per subscriber.
func NewSender(g *Guard, resolver Resolver, timeout time.Duration, idlePerHost int, userAgent string) *Sender {
	transport := &http.Transport{
		Proxy:                  nil, // a proxy would connect on our behalf, past the guard
		DialContext:            g.DialContext(resolver, timeout),
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConnsPerHost:    idlePerHost,
		IdleConnTimeout:        90 * time.Second,
	}
	return &Sender{
		client: &http.Client{
			Transport: transport,
			Timeout:   timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		userAgent: userAgent,
	}
}

// Body is the JSON of an event (contract section 11): the same bytes on
// every attempt.
func Body(ev store.Event) ([]byte, error) {
	type data struct {
		ID   int64   `json:"id"`
		Name string  `json:"name"`
		Tag  *string `json:"tag,omitempty"`
	}
	return json.Marshal(struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Data      data   `json:"data"`
	}{ev.Type, ev.Time.UTC().Format(time.RFC3339Nano), data{ev.Plant.ID, ev.Plant.Name, ev.Plant.Tag}})
}

// StatusError is a subscriber's answer that is not a 2xx.
type StatusError struct{ Status int }

func (e *StatusError) Error() string { return "answered HTTP " + strconv.Itoa(e.Status) }

// Send delivers ev to sub once, signed now, and returns nil for a 2xx.
func (s *Sender) Send(ctx context.Context, sub Subscriber, ev store.Event, now time.Time) (int, error) {
	body, err := Body(ev)
	if err != nil {
		return 0, fmt.Errorf("encoding event %s: %w", ev.ID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.URL.String(), bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.userAgent)
	req.Header.Set("webhook-id", ev.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(sub.Secrets, ev.ID, now, body))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, scrub(err, sub)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &StatusError{resp.StatusCode}
	}
	return resp.StatusCode, nil
}

// scrub drops the URL from a transport error (*url.Error quotes it, with any
// credentials or token in its query), keeping the cause.
func scrub(err error, sub Subscriber) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("POST to %s: %w", sub.Name, ue.Err)
	}
	return fmt.Errorf("POST to %s failed", sub.Name)
}
