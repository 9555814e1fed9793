package chart

import (
	"testing"
)

// TestPodDisruptionBudgetWheneverMoreThanOnePod: by default the API pods get
// a PodDisruptionBudget exactly when more than one of them runs (a drain then
// evicts them one at a time; with one pod the budget would block every
// drain), and an explicit true or false decides.
func TestPodDisruptionBudgetWheneverMoreThanOnePod(t *testing.T) {
	pdb := func(v any) map[string]any { return map[string]any{"podDisruptionBudget": map[string]any{"enabled": v}} }
	for _, tc := range []struct {
		name   string
		files  []string
		values []map[string]any
		want   bool
	}{
		{"defaults: 2 replicas", nil, nil, true},
		{"1 replica", nil, []map[string]any{{"replicaCount": 1}}, false},
		{"1 replica, forced on", nil, []map[string]any{{"replicaCount": 1}, pdb(true)}, true},
		{"2 replicas, turned off", nil, []map[string]any{pdb(false)}, false},
		{"autoscaling from 1", nil, []map[string]any{{"autoscaling": map[string]any{"enabled": true, "minReplicas": 1}}}, false},
		{"autoscaling from 2, replicaCount 1 ignored", nil, []map[string]any{{"replicaCount": 1, "autoscaling": map[string]any{"enabled": true, "minReplicas": 2}}}, true},
		{"values-dev.yaml", []string{"values-dev.yaml"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, tc.files, tc.values...)
			got := len(r.find("PodDisruptionBudget")) == 1
			if got != tc.want {
				t.Fatalf("PodDisruptionBudget rendered = %v, want %v", got, tc.want)
			}
			if got {
				wantEqual(t, "minAvailable", dig(r.get(t, "PodDisruptionBudget", "plantstore").Obj, "spec", "minAvailable"), 1.0)
			}
		})
	}
}
