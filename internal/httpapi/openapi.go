package httpapi

import (
	"net/http"
	"strconv"
)

// NewOpenAPIHandler serves the OpenAPI document. It needs no authentication:
// a client reads it to learn how to authenticate.
//
// It always sends the whole document with 200. It does not use
// http.ServeContent: that answers Range and precondition headers with 416
// (text/plain) and 412 (empty body), failures without the contract's Error
// body, and a document this small gains nothing from ranges.
func NewOpenAPIHandler(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/yaml")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Length", strconv.Itoa(len(doc)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(doc)
		}
	})
}
