// Package httpapi is the HTTP API of the plant store: the gorilla/mux
// router, strict JSON decoding, the plant handlers, the OpenAPI document's
// route, and the instrumentation every request passes through (spans,
// metrics, the access log, request ids).
package httpapi
