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
