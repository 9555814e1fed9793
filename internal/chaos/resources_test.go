package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/servicetest"
)

// Tolerances of a return to baseline, measured once the load has stopped
// and its connections are closed, against a baseline taken the same way
// after a warm-up:
//   - goroutines: +5. With no client connection open the service's
//     goroutines are its fixed ones (listeners, reloader, pool reaper,
//     telemetry); the test's own admin connection (scraping /metrics)
//     is open in both measurements. The net/http server finishes a closed
//     connection's goroutines asynchronously and the runtime starts
//     short-lived ones (GC workers are not counted, but a timer or
//     finalizer may be), so a handful of transients is allowed, while one
//     leaked goroutine per request or per failure would show as hundreds.
//   - open file descriptors, other than Redis pool connections: +2, for the
//     same transients on the admin port.
//   - Redis pool connections: at most the load's concurrency plus one for
//     /readyz pings: the pool grows only with concurrent use, so more means
//     a connection is leaked (checked out and never returned).
const (
	goroutineTolerance = 5
	fdTolerance        = 2
)

// quiet returns the service's resources once they have stopped changing
// (the same goroutines and descriptors three readings in a row, 200 ms
// apart, nothing in flight): the baseline, taken after a warm-up whose
// connections the server is still closing.
func quiet(t *testing.T, s *servicetest.Service) servicetest.Resources {
	t.Helper()
	var prev, now servicetest.Resources
	same := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		now = s.Resources(t)
		if now.Goroutines == prev.Goroutines && now.OpenFDs == prev.OpenFDs && now.RequestInFlight == 0 {
			if same++; same == 2 {
				return now
			}
		} else {
			same = 0
		}
		prev = now
	}
	t.Fatalf("the service's resources did not settle within 10 s of the warm-up: %v", now)
	return now
}

// settle waits up to 10 s for the service's resources to come back within
// the tolerances of base with at most concurrency Redis connections in use,
// and returns the last reading and whether they did.
func settle(t *testing.T, s *servicetest.Service, base servicetest.Resources, concurrency int) (servicetest.Resources, error) {
	t.Helper()
	var now servicetest.Resources
	ok := servicetest.Eventually(10*time.Second, 20*time.Millisecond, func() bool {
		now = s.Resources(t)
		return withinBaseline(base, now, concurrency) == nil
	})
	if !ok {
		return now, withinBaseline(base, now, concurrency)
	}
	return now, nil
}

func withinBaseline(base, now servicetest.Resources, concurrency int) error {
	switch {
	case now.Goroutines > base.Goroutines+goroutineTolerance:
		return fmt.Errorf("goroutines %g, baseline %g (+%d allowed)", now.Goroutines, base.Goroutines, goroutineTolerance)
	case now.OpenFDs-now.PoolTotal > base.OpenFDs-base.PoolTotal+fdTolerance:
		return fmt.Errorf("open fds %g (%g Redis connections), baseline %g (%g Redis connections; +%d allowed)",
			now.OpenFDs, now.PoolTotal, base.OpenFDs, base.PoolTotal, fdTolerance)
	case now.PoolTotal > float64(concurrency+1):
		return fmt.Errorf("%g Redis pool connections for a concurrency of %d", now.PoolTotal, concurrency)
	case now.RequestInFlight != 0:
		return fmt.Errorf("%g requests in flight with no client", now.RequestInFlight)
	}
	return nil
}
