package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The body of a webhook is WebhookEvent and its event types are
// EventPlantCreated and EventPlantDeleted, generated from the document's
// x-webhooks and its WebhookEvent schema (client.gen.go); this file adds the
// Standard Webhooks verification a receiver needs before it trusts one.

// DefaultWebhookTolerance is how far a webhook's timestamp may be from the
// receiver's clock, either way, the Standard Webhooks libraries' default.
const DefaultWebhookTolerance = 5 * time.Minute

// Errors of Verify, to match with errors.Is.
var (
	ErrWebhookHeaders   = errors.New("webhook: missing or malformed webhook-id, webhook-timestamp or webhook-signature header")
	ErrWebhookTimestamp = errors.New("webhook: timestamp outside the tolerance (replayed or delayed)")
	ErrWebhookSignature = errors.New("webhook: no signature matches")
	ErrWebhookSecret    = errors.New("webhook: secret is not whsec_<base64>")
)

// VerifyWebhook checks a webhook the plant store sent, as the Standard
// Webhooks specification says: secret is the subscriber's whsec_<base64>
// secret (a bare base64 key is accepted too), headers the request's, body
// its exact bytes. It returns nil when one of the v1 signatures of the
// webhook-signature header (space-separated; two during a secret rotation)
// is the HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" and the
// timestamp is within tolerance of now (DefaultWebhookTolerance when zero,
// either way). The webhook-id is the same on every retry of one event: a
// receiver deduplicates on it.
//
//	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
//	if err := client.VerifyWebhook(secret, r.Header, body, 0); err != nil { 401 }
//	var ev client.WebhookEvent; json.Unmarshal(body, &ev)
func VerifyWebhook(secret string, headers http.Header, body []byte, tolerance time.Duration) error {
	return verifyWebhookAt(secret, headers, body, tolerance, time.Now())
}

func verifyWebhookAt(secret string, headers http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return ErrWebhookSecret
	}
	id, ts, sigs := headers.Get("webhook-id"), headers.Get("webhook-timestamp"), headers.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return ErrWebhookHeaders
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook-timestamp %q is not Unix seconds", ErrWebhookHeaders, ts)
	}
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrWebhookTimestamp
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue // another scheme (v1a, ...): not ours to check
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrWebhookSignature
}

// ParseWebhookEvent verifies a webhook (VerifyWebhook) and decodes its body.
func ParseWebhookEvent(secret string, headers http.Header, body []byte, tolerance time.Duration) (WebhookEvent, error) {
	if err := VerifyWebhook(secret, headers, body, tolerance); err != nil {
		return WebhookEvent{}, err
	}
	var ev WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return WebhookEvent{}, fmt.Errorf("webhook: decoding the event: %w", err)
	}
	return ev, nil
}
