package httpapi_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestInstrumentationLabels: each request counts once in the duration
// histogram's series of its method, route template and status; unknown
// paths and methods fall into bounded labels.
func TestInstrumentationLabels(t *testing.T) {
	handler, reg, _ := instrumented(t)
	serveSamples(handler)
	want := `
# HELP plantstore_http_requests_in_flight Requests being served now.
# TYPE plantstore_http_requests_in_flight gauge
plantstore_http_requests_in_flight 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "plantstore_http_requests_in_flight"); err != nil {
		t.Error(err)
	}
	counts := map[string]int{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "plantstore_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			counts[strings.TrimSpace(key)] = int(m.GetHistogram().GetSampleCount())
		}
	}
	wantCounts := map[string]int{
		"code=200 method=POST route=/plants":        2,
		"code=200 method=GET route=/plants":         1,
		"code=405 method=PUT route=/plants":         1,
		"code=404 method=GET route=/plants/{id}":    1,
		"code=404 method=DELETE route=/plants/{id}": 1,
		"code=404 method=POST route=unmatched":      1,
		"code=405 method=OTHER route=/plants":       1,
	}
	for k, v := range wantCounts {
		if counts[k] != v {
			t.Errorf("series {%s} counted %d, want %d (all: %v)", k, counts[k], v, counts)
		}
	}
	if len(counts) != len(wantCounts) {
		t.Errorf("series %v, want exactly %v", counts, wantCounts)
	}
}
