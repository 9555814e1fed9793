// Package webhook delivers the plant store's events (contract section 11):
// the subscribers file, Standard Webhooks signatures, the guard that keeps
// deliveries off internal addresses, and the workers that drain the store's
// outbox at least once. docs/webhooks.md is the operator's view.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Secret is a subscriber's signing key, the bytes of its whsec_<base64> form.
type Secret []byte

// secretPrefix starts every secret in the subscribers file.
const secretPrefix = "whsec_"

// minSecretBytes is the shortest key accepted: 24 bytes (192 bits), the
// Standard Webhooks specification's lower bound.
const minSecretBytes = 24

// ParseSecret reads a whsec_<base64> secret.
func ParseSecret(s string) (Secret, error) {
	enc, ok := strings.CutPrefix(s, secretPrefix)
	if !ok {
		return nil, errors.New("a secret must start with whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("a secret must be whsec_ and standard base64: %w", err)
	}
	if len(key) < minSecretBytes {
		return nil, fmt.Errorf("a secret must hold at least %d bytes, this one holds %d", minSecretBytes, len(key))
	}
	return key, nil
}

// Sign returns the webhook-signature header of a message: one
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" per secret, space-separated
// (two while a secret is being rotated).
func Sign(secrets []Secret, id string, ts time.Time, body []byte) string {
	prefix := []byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + ".")
	sigs := make([]string, len(secrets))
	for i, key := range secrets {
		mac := hmac.New(sha256.New, key)
		mac.Write(prefix)
		mac.Write(body)
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	return strings.Join(sigs, " ")
}
