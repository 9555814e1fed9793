package client

import (
	"testing"

	"github.com/plantstore/plantstore/internal/apierror"
)

// TestCodesAreTheService: each code constant a caller branches on is the
// service's code for the same failure.
func TestCodesAreTheService(t *testing.T) {
	for name, c := range map[string]struct {
		client  int32
		service apierror.Code
	}{
		"CodeConflict":            {CodeConflict, apierror.IDTaken},
		"CodePlantNotFound":       {CodePlantNotFound, apierror.PlantNotFound},
		"CodeTokenNotAccepted":    {CodeTokenNotAccepted, apierror.TokenRejected},
		"CodeInsufficientScope":   {CodeInsufficientScope, apierror.InsufficientScope},
		"CodeRateLimited":         {CodeRateLimited, apierror.RateLimited},
		"CodeStoreUnavailable":    {CodeStoreUnavailable, apierror.StoreUnavailable},
		"CodeInvalidPageLimit":    {CodeInvalidPageLimit, apierror.BadLimit},
		"CodeCursorNotRecognised": {CodeCursorNotRecognised, apierror.BadCursor},
	} {
		if c.client != int32(c.service) {
			t.Errorf("%s = %d, the service answers %d for it", name, c.client, c.service)
		}
	}
}
