package auth

import (
	"errors"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsRegistered: the auth metrics are plantstore_auth_*, the
// reasons' series there from the start, and a second registration fails.
func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, func() int { return 2 })
	if err != nil {
		t.Fatal(err)
	}
	m.Reload(nil)
	m.Reload(errors.New("bad line"))
	m.Failure(ReasonIssuerUnavailable)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	series := map[string]int{}
	for _, f := range families {
		names = append(names, f.GetName())
		series[f.GetName()] = len(f.GetMetric())
	}
	want := []string{"plantstore_auth_failures_total", "plantstore_auth_token_reloads_total", "plantstore_auth_tokens"}
	if !slices.Equal(names, want) {
		t.Errorf("metrics %v, want %v", names, want)
	}
	if n := series["plantstore_auth_failures_total"]; n != 6 {
		t.Errorf("%d failure series, want the 5 reasons of API keys and issuer_unavailable", n)
	}
	if _, err := NewMetrics(reg, func() int { return 0 }); err == nil {
		t.Error("a second registration on one registry succeeded")
	}
}
