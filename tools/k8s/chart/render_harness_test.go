package chart

import "testing"

// The harness itself: the default values render, every value set renders,
// and a broken value fails the render as helm template would.
func TestRenderHarness(t *testing.T) {
	r := mustRender(t, nil)
	r.get(t, "Deployment", "plantstore")
	if len(r.find("Pod")) == 0 {
		t.Errorf("the helm test Pod (a hook) is not among the objects")
	}
	for _, set := range valueSets(t) {
		if _, err := renderTemplate(t, []string{set}); err != nil {
			t.Errorf("%s: %v", set, err)
		}
	}
	if _, err := renderTemplate(t, nil, map[string]any{"replicaCount": "two"}); err == nil {
		t.Errorf("replicaCount=two rendered; want the schema's error")
	}
}

// Chart.yaml's kubeVersion refuses a cluster older than the fields the
// chart relies on (matchLabelKeys, unhealthyPodEvictionPolicy: 1.27).
func TestKubeVersion(t *testing.T) {
	for v, ok := range map[string]bool{"v1.26.9": false, "v1.27.0": true, "v1.31.0": true, "v1.30.4-eks-a737599": true, "v1.26.15-gke.1": false} {
		_, err := renderRelease(t, releaseName, v, nil)
		if ok != (err == nil) {
			t.Errorf("Kubernetes %s: render error %v, want accepted %v", v, err, ok)
		}
	}
}
