package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/plantstore/plantstore/internal/version"
)

// exportCounter is an OTLP/HTTP trace receiver that records how many spans
// each export carried.
type exportCounter struct {
	mu      sync.Mutex
	exports []int
}

func (c *exportCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	c.mu.Lock()
	c.exports = append(c.exports, n)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (c *exportCounter) get() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.exports)
}

// TestExportBatchSize: with an hour's schedule delay only full batches
// export before the shutdown, so the exports' sizes are the batch size:
// exportBatch by default, OTEL_BSP_MAX_EXPORT_BATCH_SIZE when it is set.
// The shutdown delivers the rest.
func TestExportBatchSize(t *testing.T) {
	const spans = 300
	for _, tc := range []struct {
		name string
		env  string // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
		want []int  // the exports before the shutdown
	}{
		{name: "default", want: []int{exportBatch, exportBatch}},
		{name: "environment", env: "256", want: []int{256}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter := &exportCounter{}
			srv := httptest.NewServer(counter)
			defer srv.Close()
			t.Setenv("OTEL_SDK_DISABLED", "")
			t.Setenv("OTEL_TRACES_EXPORTER", "")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
			t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", strconv.Itoa(int(time.Hour/time.Millisecond)))
			t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", tc.env)
			tr, err := NewTracing(context.Background(), version.Get())
			if err != nil {
				t.Fatal(err)
			}
			tracer := tr.Provider.Tracer("t")
			for range spans {
				_, span := tracer.Start(context.Background(), "s")
				span.End()
			}
			// The coalescing processor hands on bursts of 64 or after 100 ms;
			// the batch processor then exports each full batch at once.
			deadline := time.Now().Add(10 * time.Second)
			for len(counter.get()) < len(tc.want) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond) // an export too many would show by now
			if got := counter.get(); !slices.Equal(got, tc.want) {
				t.Fatalf("exports before the shutdown carried %v spans, want %v", got, tc.want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tr.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, n := range counter.get() {
				total += n
			}
			if total != spans {
				t.Fatalf("%d spans exported in all, want %d", total, spans)
			}
		})
	}
}
