package webhook

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/api/client"
)

// The Standard Webhooks specification's published vector.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func testSecret(t *testing.T, fill byte) (string, Secret) {
	t.Helper()
	s := "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(fill)), 32)))
	key, err := ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, key
}

func TestSignVector(t *testing.T) {
	// The vector's key is 21 bytes, below what the subscribers file
	// accepts; sign with its bytes directly.
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(vectorSecret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Sign([]Secret{key}, vectorID, time.Unix(1614265330, 0), []byte(vectorBody)); got != vectorSignature {
		t.Fatalf("Sign = %s, want the specification's %s", got, vectorSignature)
	}
}

// TestSignRotation: two secrets make two signatures, and a receiver
// holding either verifies the message with the client's VerifyWebhook.
func TestSignRotation(t *testing.T) {
	oldText, oldKey := testSecret(t, 'o')
	newText, newKey := testSecret(t, 'n')
	_, otherKey := testSecret(t, 'x')
	now := time.Now()
	body := []byte(`{"type":"plant.created"}`)
	sig := Sign([]Secret{oldKey, newKey}, "msg_1", now, body)
	if parts := strings.Fields(sig); len(parts) != 2 || !strings.HasPrefix(parts[0], "v1,") || !strings.HasPrefix(parts[1], "v1,") {
		t.Fatalf("signature header = %q, want two v1 signatures", sig)
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_1")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)
	for _, s := range []string{oldText, newText} {
		if err := client.VerifyWebhook(s, h, body, 0); err != nil {
			t.Errorf("a receiver with one of the secrets: %v", err)
		}
	}
	h.Set("webhook-signature", Sign([]Secret{otherKey}, "msg_1", now, body))
	if err := client.VerifyWebhook(oldText, h, body, 0); err == nil {
		t.Error("a signature with another secret verified")
	}
}

func TestParseSecret(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "start with whsec_"},
		{"whsec_***", "base64"},
		{"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23)), "at least 24 bytes"},
	} {
		if _, err := ParseSecret(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSecret(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
	if k, err := ParseSecret("whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 24))); err != nil || len(k) != 24 {
		t.Errorf("a 24-byte secret: %v", err)
	}
}
