package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/otlptest"
)

// otlpReceiver is the collector the service exports to in these tests: an
// otlptest.Recorder served in-process.
type otlpReceiver struct {
	*otlptest.Recorder
	url string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rec := otlptest.NewRecorder()
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return &otlpReceiver{Recorder: rec, url: srv.URL}
}

// env is the environment that points the service's tracing at r, sampling
// every trace and exporting within 100ms, with the pod, namespace and node
// as resource attributes (as the chart passes them).
func (r *otlpReceiver) env() []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.url,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_SAMPLER=parentbased_always_on",
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_RESOURCE_ATTRIBUTES=k8s.pod.name=pod-1,k8s.namespace.name=ns-1,k8s.node.name=node-1",
	}
}

// newTraceparent returns a random sampled W3C trace context: the trace id,
// the parent span id and the traceparent header carrying them.
func newTraceparent(t testing.TB) (traceID, spanID, header string) {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	traceID, spanID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	return traceID, spanID, "00-" + traceID + "-" + spanID + "-01"
}

// randomHex returns n random bytes as hex.
func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// containsFold reports whether s contains substr, ignoring case.
func containsFold(s, substr string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(substr))
}
