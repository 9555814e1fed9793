package httpapi_test

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/httpapi"
)

// TestInstrumentationExemplarsPerBucket: a sampled request leaves its trace
// id as an exemplar on its bucket, but one bucket takes at most one
// exemplar per 100 ms, so that a burst of fast requests costs no exemplar
// work and cannot keep a slow request's bucket from getting its own.
func TestInstrumentationExemplarsPerBucket(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)) // every request sampled
	reg := prometheus.NewRegistry()
	in, err := httpapi.NewInstrumentation(reg, tp, propagation.TraceContext{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	handler := in.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Sleeps well inside one bucket each: 25–50 ms and 250–500 ms.
		if r.URL.Query().Has("slow") {
			time.Sleep(300 * time.Millisecond)
		} else {
			time.Sleep(30 * time.Millisecond)
		}
	}))
	send := func(query string) string {
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/plants"+query, nil))
		ended := spans.Ended()
		return ended[len(ended)-1].SpanContext().TraceID().String()
	}
	// exemplars maps each bucket's upper bound to its exemplar's trace id.
	exemplars := func() map[float64]string {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[float64]string{}
		for _, f := range families {
			if f.GetName() != "plantstore_http_request_duration_seconds" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, b := range m.GetHistogram().GetBucket() {
					for _, l := range b.GetExemplar().GetLabel() {
						if l.GetName() == "trace_id" {
							got[b.GetUpperBound()] = l.GetValue()
						}
					}
				}
			}
		}
		return got
	}

	values := func(m map[float64]string) []string { return slices.Collect(maps.Values(m)) }
	slow := send("?slow")
	start := time.Now()
	first := send("") // another bucket, within 100 ms of the slow exemplar: its own
	got := exemplars()
	if len(got) != 2 || !slices.Contains(values(got), slow) || !slices.Contains(values(got), first) {
		t.Fatalf("exemplars %v, want the slow request's %s and the fast one's %s in their own buckets", got, slow, first)
	}
	var fastBucket float64
	for bucket, id := range got {
		if id == first {
			fastBucket = bucket
		}
	}
	// The fast bucket again, within 100 ms: its exemplar stays the first's.
	// (On a busy machine the request may take longer and land in another
	// bucket, which then takes it as its own: the fast one still keeps the
	// first's.)
	send("")
	if got := exemplars(); got[fastBucket] != first && time.Since(start) < 95*time.Millisecond {
		t.Errorf("exemplars %v: the fast bucket (%v) took %s within 100 ms of its last", got, fastBucket, got[fastBucket])
	}
	time.Sleep(100 * time.Millisecond)
	again := send("")
	if got := exemplars(); !slices.Contains(values(got), again) {
		t.Errorf("exemplars %v, want the fast bucket's replaced by %s after 100 ms", got, again)
	}
}
