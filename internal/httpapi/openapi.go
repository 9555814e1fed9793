package httpapi

import (
	"bytes"
	"net/http"
	"time"
)

// NewOpenAPIHandler serves the OpenAPI document. It needs no authentication:
// a client reads it to learn how to authenticate.
func NewOpenAPIHandler(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.ServeContent(w, r, "openapi.yaml", time.Time{}, bytes.NewReader(doc))
	})
}
