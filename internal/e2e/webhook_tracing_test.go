package e2e

import (
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/otlptest"
)

// TestWebhookDeliverySampledWithItsCreate: with a ratio sampler that
// samples no new trace by itself (parentbased_traceidratio 0, the chart's
// sampler at a ratio that leaves nothing to chance), a webhook delivery is
// traced when the create that made its event was (the caller's sampled
// traceparent), its span linked to the create's server span, and is not
// traced when the create was not.
func TestWebhookDeliverySampledWithItsCreate(t *testing.T) {
	rec := newOTLPReceiver(t)
	var delivered atomic.Int32
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hooks.Close)
	subscribers := filepath.Join(t.TempDir(), "subscribers")
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a secret of thirty-two bytes....."))
	if err := os.WriteFile(subscribers, []byte(hooks.URL+"/hooks "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startService(t, options{
		Env: append(rec.env(), "OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0"),
		Extra: []string{"--webhook-subscribers-file", subscribers, "--webhook-allow-cidrs", "127.0.0.0/8",
			"--webhook-poll-interval", "20ms"},
	})

	traceID, parentID, traceparent := newTraceparent(t)
	if r := s.Do(t, http.MethodPost, "/plants", `{"id": 1, "name": "Monstera"}`, map[string]string{"traceparent": traceparent}); r.Status != 200 {
		t.Fatalf("the traced create: %d %s", r.Status, r.Body)
	}
	if r := s.Do(t, http.MethodPost, "/plants", `{"id": 2, "name": "Fern"}`, nil); r.Status != 200 {
		t.Fatalf("the untraced create: %d %s", r.Status, r.Body)
	}
	deadline := time.Now().Add(spanWait)
	for delivered.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 events delivered within %s:\n%s", delivered.Load(), spanWait, s.Logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The shutdown flushes every span the service recorded.
	if code := s.Signal(t, syscall.SIGTERM, defaultExitWait); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, s.Logs)
	}

	spans := rec.Spans()
	create, ok := serverSpan(spans, traceID, parentID)
	if !ok {
		t.Fatalf("the traced create's server span was not exported:\n%s", otlptest.Describe(spans))
	}
	var deliveries []otlptest.Span
	for _, sp := range spans {
		if sp.GetName() == "webhook plant.created" {
			deliveries = append(deliveries, sp)
		}
	}
	if len(deliveries) != 1 {
		t.Fatalf("%d delivery spans exported, want 1 (the traced create's, not the other's):\n%s", len(deliveries), otlptest.Describe(spans))
	}
	d := deliveries[0]
	if id, _ := d.Attr("plant.id"); id != "1" {
		t.Errorf("the delivery traced is plant %s's, want plant 1's", id)
	}
	if d.TraceID() == traceID || d.ParentSpanID() != "" {
		t.Errorf("the delivery is not a trace of its own: trace %s, parent %q", d.TraceID(), d.ParentSpanID())
	}
	linked := false
	for _, l := range d.GetLinks() {
		linked = linked || hex.EncodeToString(l.GetTraceId()) == traceID && hex.EncodeToString(l.GetSpanId()) == create.SpanID()
	}
	if !linked {
		t.Errorf("the delivery's span does not link to the create's server span %s:\n%s", create.SpanID(), otlptest.Describe([]otlptest.Span{d}))
	}
	for _, sp := range spans {
		if sp.TraceID() != traceID && sp.TraceID() != d.TraceID() {
			t.Errorf("span %q of another trace exported: the ratio 0 sampled a trace by itself", sp.GetName())
		}
	}
	rec.CheckNoRefusals(t)
}
