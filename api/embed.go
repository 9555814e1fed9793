// Package api holds the service's OpenAPI document, embedded so that the
// binary serves exactly the document in the repository.
package api

import _ "embed"

// OpenAPI is the OpenAPI 3 document of the service; its info.version is the
// interface version the binary serves.
//
//go:embed openapi.yaml
var OpenAPI []byte
