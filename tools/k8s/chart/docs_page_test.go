package chart

import "testing"

// config.docsPage reaches the service as PLANTSTORE_DOCS_PAGE: the reference
// page (GET /docs) is on by default, and an operator who wants none turns it
// off with one value.
func TestDocsPageValue(t *testing.T) {
	for _, tc := range []struct {
		values []map[string]any
		want   string
	}{
		{nil, "true"},
		{[]map[string]any{{"config": map[string]any{"docsPage": false}}}, "false"},
	} {
		api := mustRender(t, nil, tc.values...).get(t, "Deployment", "plantstore")
		if got := envOf(container(podSpec(api), "plantstore"))["PLANTSTORE_DOCS_PAGE"]; got != tc.want {
			t.Errorf("values %v: PLANTSTORE_DOCS_PAGE = %q, want %q", tc.values, got, tc.want)
		}
	}
}
