package servicetest

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape fetches the admin /metrics with the given Accept header and checks
// it was answered in that format.
func (s *Service) Scrape(t testing.TB, accept string) string {
	t.Helper()
	text, err := s.scrape(accept)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func (s *Service) scrape(accept string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, s.Admin+"/metrics", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", accept)
	resp, err := Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("scraping /metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("/metrics answered %d: %s", resp.StatusCode, b)
	}
	// The format asked for, not a fallback.
	want, _, _ := strings.Cut(accept, ";")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, want) {
		return "", fmt.Errorf("/metrics with Accept %q answered Content-Type %q", accept, ct)
	}
	return string(b), nil
}

// Metrics scrapes the Prometheus text format and parses it.
func (s *Service) Metrics(t testing.TB) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	families, text, err := s.metrics()
	if err != nil {
		t.Fatal(err)
	}
	return families, text
}

func (s *Service) metrics() (map[string]*dto.MetricFamily, string, error) {
	text, err := s.scrape("text/plain")
	if err != nil {
		return nil, "", err
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, "", fmt.Errorf("/metrics is not valid text exposition: %v\n%s", err, text)
	}
	return families, text, nil
}

// Resources are the gauges that show whether the process returns to its
// baseline: a goroutine, a file descriptor or a pooled connection that
// leaks shows here. The process cannot be inspected from outside otherwise
// (its goroutines are not visible to the test), so they come from /metrics.
type Resources struct {
	Goroutines      float64 // go_goroutines
	OpenFDs         float64 // process_open_fds
	MaxFDs          float64 // process_max_fds
	ResidentBytes   float64 // process_resident_memory_bytes
	HeapBytes       float64 // go_memstats_heap_inuse_bytes
	PoolTotal       float64 // plantstore_redis_pool_total_connections (0 on the embedded store)
	PoolIdle        float64 // plantstore_redis_pool_idle_connections
	RequestInFlight float64 // plantstore_http_requests_in_flight
}

func (r Resources) String() string {
	return fmt.Sprintf("goroutines=%g fds=%g rss=%.1fMiB heap=%.1fMiB pool_total=%g pool_idle=%g in_flight=%g",
		r.Goroutines, r.OpenFDs, r.ResidentBytes/(1<<20), r.HeapBytes/(1<<20), r.PoolTotal, r.PoolIdle, r.RequestInFlight)
}

// Resources scrapes /metrics and returns the resource gauges.
func (s *Service) Resources(t testing.TB) Resources {
	t.Helper()
	families, _ := s.Metrics(t)
	return Resources{
		Goroutines:      Value(families, "go_goroutines"),
		OpenFDs:         Value(families, "process_open_fds"),
		MaxFDs:          Value(families, "process_max_fds"),
		ResidentBytes:   Value(families, "process_resident_memory_bytes"),
		HeapBytes:       Value(families, "go_memstats_heap_inuse_bytes"),
		PoolTotal:       Value(families, "plantstore_redis_pool_total_connections"),
		PoolIdle:        Value(families, "plantstore_redis_pool_idle_connections"),
		RequestInFlight: Value(families, "plantstore_http_requests_in_flight"),
	}
}

// Value is the sum over the series of a gauge or counter family (0 when
// the family is missing).
func Value(families map[string]*dto.MetricFamily, name string) float64 {
	mf, ok := families[name]
	if !ok {
		return 0
	}
	var sum float64
	for _, m := range mf.GetMetric() {
		switch {
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// Batching checks that a service started with args batched its Redis
// commands (its plantstore_redis_batch_size histogram has samples), as it
// does unless args hold --redis-batch=false, or its creates wait for
// replicas (those are never batched). It returns the figures for a CHAOS
// line: empty with batching off.
func (s *Service) Batching(t testing.TB, args []string) string {
	t.Helper()
	if slices.Contains(args, "--redis-batch=false") {
		return ""
	}
	families, _ := s.Metrics(t)
	var n uint64
	var sum float64
	if mf, ok := families["plantstore_redis_batch_size"]; ok && len(mf.GetMetric()) == 1 {
		n, sum = mf.GetMetric()[0].GetHistogram().GetSampleCount(), mf.GetMetric()[0].GetHistogram().GetSampleSum()
	}
	if n == 0 {
		if !slices.Contains(args, "--redis-min-replica-acks") {
			t.Error("batching on: the service sent no batch (plantstore_redis_batch_size)")
		}
		return " batches=0"
	}
	return fmt.Sprintf(" batches=%d mean_batch=%.1f", n, sum/float64(n))
}
