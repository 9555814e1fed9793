// Package api holds the service's OpenAPI document, embedded so that the
// binary serves exactly the document in the repository.
package api

import _ "embed"

// OpenAPI is the OpenAPI 3 document of the service (version 1.0.0).
//
//go:embed openapi.yaml
var OpenAPI []byte
