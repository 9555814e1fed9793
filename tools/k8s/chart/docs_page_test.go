package chart

import (
	"fmt"
	"testing"
)

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
		wantEqual(t, fmt.Sprintf("values %v: PLANTSTORE_DOCS_PAGE", tc.values), envOf(api(t, mustRender(t, nil, tc.values...)))["PLANTSTORE_DOCS_PAGE"], tc.want)
	}
}
