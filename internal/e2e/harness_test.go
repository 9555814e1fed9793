// Package e2e tests the built binary as a client and an operator would: it
// builds cmd/plantstore, starts it against a real redis-server and talks HTTP.
// The process harness is internal/servicetest, shared with the chaos tests.
package e2e

import (
	"testing"

	"github.com/plantstore/plantstore/internal/servicetest"
)

// binary is the service built once for the whole package.
var binary string

func TestMain(m *testing.M) { servicetest.Main(m, &binary) }

type (
	service = servicetest.Service
	options = servicetest.Options
	reply   = servicetest.Reply
)

var client = servicetest.Client

// startService starts the binary and waits until it is ready.
func startService(t *testing.T, opts options) *service {
	t.Helper()
	return servicetest.Start(t, binary, opts)
}

// launch starts the binary and waits for its listeners; it returns an error
// when the process exits first.
func launch(t *testing.T, opts options) (*service, error) {
	t.Helper()
	return servicetest.Launch(t, binary, opts)
}
