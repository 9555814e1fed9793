// Package hostile sends the built service hostile input over raw TCP:
// malformed JSON of every kind, numbers and strings at and past their
// limits, oversized and malformed HTTP, bodies that never end, request
// smuggling, odd targets and methods, wrong and forged tokens. It starts its
// own redis-server and service process, asserts that each request gets a
// clear Error body or a closed connection and never a 5xx, that nothing is
// stored, and that the service is still alive and serving afterwards, and
// prints one CHAOS line of figures.
package hostile

import (
	"testing"

	"github.com/plantstore/plantstore/internal/servicetest"
)

// binary is the service built once for the whole package.
var binary string

func TestMain(m *testing.M) { servicetest.LongMain(m, &binary) }
