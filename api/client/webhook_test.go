package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// The test vector the Standard Webhooks specification publishes (its
// reference libraries' sign test): secret, id, timestamp and body, and the
// signature they make.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = "1614265330"
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var vectorTime = time.Unix(1614265330, 0)

func headers(id, ts, sig string) http.Header {
	h := http.Header{}
	for k, v := range map[string]string{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig} {
		if v != "" {
			h.Set(k, v)
		}
	}
	return h
}

func sign(t *testing.T, secret, id, ts, body string) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestVerifyWebhook(t *testing.T) {
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another secret of 32 bytes......"))
	tests := []struct {
		name    string
		secret  string
		h       http.Header
		body    string
		now     time.Time
		tol     time.Duration
		wantErr error
	}{
		{name: "the specification's vector", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime},
		{name: "the vector's key without whsec_", secret: vectorSecret[len("whsec_"):], h: headers(vectorID, vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime},
		{name: "two signatures (rotation), the second matching", secret: vectorSecret,
			h: headers(vectorID, vectorTimestamp, sign(t, other, vectorID, vectorTimestamp, vectorBody)+" "+vectorSignature), body: vectorBody, now: vectorTime},
		{name: "two signatures, the first matching", secret: other,
			h: headers(vectorID, vectorTimestamp, sign(t, other, vectorID, vectorTimestamp, vectorBody)+" "+vectorSignature), body: vectorBody, now: vectorTime},
		{name: "another scheme before ours is skipped", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, "v1a,AAAA "+vectorSignature), body: vectorBody, now: vectorTime},
		{name: "4:59 late is within the default tolerance", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime.Add(299 * time.Second)},
		{name: "4:59 early is within the default tolerance", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime.Add(-299 * time.Second)},

		{name: "tampered body", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, vectorSignature), body: `{"test": 2432232315}`, now: vectorTime, wantErr: ErrWebhookSignature},
		{name: "tampered id", secret: vectorSecret, h: headers("msg_p5jXN8AQM9LWM0D4loKWxJeK", vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime, wantErr: ErrWebhookSignature},
		{name: "tampered timestamp", secret: vectorSecret, h: headers(vectorID, "1614265331", vectorSignature), body: vectorBody, now: vectorTime, wantErr: ErrWebhookSignature},
		{name: "wrong secret", secret: other, h: headers(vectorID, vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime, wantErr: ErrWebhookSignature},
		{name: "signature under another scheme only", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, "v2,"+vectorSignature[3:]), body: vectorBody, now: vectorTime, wantErr: ErrWebhookSignature},
		{name: "signature not base64", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, "v1,@@@"), body: vectorBody, now: vectorTime, wantErr: ErrWebhookSignature},
		{name: "expired: 5:01 late", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime.Add(301 * time.Second), wantErr: ErrWebhookTimestamp},
		{name: "from the future: 5:01 early", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime.Add(-301 * time.Second), wantErr: ErrWebhookTimestamp},
		{name: "expired under a tolerance of 10 s", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime.Add(11 * time.Second), tol: 10 * time.Second, wantErr: ErrWebhookTimestamp},
		{name: "no webhook-id", secret: vectorSecret, h: headers("", vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime, wantErr: ErrWebhookHeaders},
		{name: "no webhook-signature", secret: vectorSecret, h: headers(vectorID, vectorTimestamp, ""), body: vectorBody, now: vectorTime, wantErr: ErrWebhookHeaders},
		{name: "timestamp not a number", secret: vectorSecret, h: headers(vectorID, "2021-02-25", vectorSignature), body: vectorBody, now: vectorTime, wantErr: ErrWebhookHeaders},
		{name: "secret not base64", secret: "whsec_not*base64", h: headers(vectorID, vectorTimestamp, vectorSignature), body: vectorBody, now: vectorTime, wantErr: ErrWebhookSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verifyWebhookAt(tt.secret, tt.h, []byte(tt.body), tt.tol, tt.now)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("verify = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestParseWebhookEvent(t *testing.T) {
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	body := `{"type":"plant.deleted","timestamp":"2026-01-02T03:04:05.123Z","data":{"id":-9223372036854775808,"name":"Fern","tag":""}}`
	ev, err := ParseWebhookEvent(vectorSecret, headers("msg_1", ts, sign(t, vectorSecret, "msg_1", ts, body)), []byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != EventPlantDeleted || ev.Data.Id != -9223372036854775808 || ev.Data.Name != "Fern" || ev.Data.Tag == nil || *ev.Data.Tag != "" ||
		!ev.Timestamp.Equal(time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC)) {
		t.Fatalf("event = %+v", ev)
	}
	if _, err := ParseWebhookEvent(vectorSecret, headers("msg_2", ts, sign(t, vectorSecret, "msg_1", ts, body)), []byte(body), 0); !errors.Is(err, ErrWebhookSignature) {
		t.Fatalf("a signature for another id: %v", err)
	}
}
