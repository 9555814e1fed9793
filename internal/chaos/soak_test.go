package chaos

import (
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
)

// soakDuration is PLANTSTORE_SOAK (make soak sets 10m), 10 s by default.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("PLANTSTORE_SOAK")
	if v == "" {
		return 10 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("PLANTSTORE_SOAK=%q is not a positive Go duration", v)
	}
	return d
}

// soakFixed are the plants created before the soak, for replays and conflicts.
const soakFixed = 100

func fixedBody(id int64) string { return fmt.Sprintf(`{"id": %d, "name": "fixed %d"}`, id, id) }

// soakMix is the soak's traffic, one request kind per residue of the
// sequence number modulo 10, with the status each must answer.
var soakMix = []struct {
	kind   string
	status int
	make   func(n int64) servicetest.Request
}{
	{"create", 200, servicetest.CreateRequest},
	{"create", 200, servicetest.CreateRequest},
	{"create", 200, servicetest.CreateRequest},
	{"create", 200, servicetest.CreateRequest},
	{"replay", 200, func(n int64) servicetest.Request {
		id := n%soakFixed + 1
		return servicetest.Request{ID: id, Body: fixedBody(id)}
	}},
	{"replay", 200, func(n int64) servicetest.Request {
		id := n%soakFixed + 1
		return servicetest.Request{ID: id, Body: fixedBody(id)}
	}},
	{"conflict", 409, func(n int64) servicetest.Request {
		id := n%soakFixed + 1
		return servicetest.Request{ID: id, Body: fmt.Sprintf(`{"id": %d, "name": "other %d"}`, id, n)}
	}},
	{"malformed", 400, func(n int64) servicetest.Request {
		return servicetest.Request{Body: fmt.Sprintf(`{"id": %d, "name": `, n)}
	}},
	{"bad token", 401, func(n int64) servicetest.Request {
		return servicetest.Request{Body: fixedBody(1), Header: map[string]string{"Authorization": "Bearer not-a-token"}}
	}},
	{"unknown path", 404, func(n int64) servicetest.Request {
		return servicetest.Request{Method: http.MethodGet, Path: fmt.Sprintf("/plants/%d", n)}
	}},
}

// soakRequest is the n-th request of the soak.
func soakRequest(n int64) servicetest.Request {
	m := soakMix[n%int64(len(soakMix))]
	r := m.make(n)
	if m.kind != "create" {
		r.Kind = m.kind
	}
	return r
}

// Flatness tolerances, comparing the last sample with the first after the
// warm-up (a fifth of the run):
//   - goroutines: the steady load keeps one connection per worker, whose
//     goroutines come and go with its request (the handler's background
//     read), so up to 2 per worker plus the fixed transients of
//     goroutineTolerance; a leak per request would add thousands.
//   - descriptors other than Redis connections: fdTolerance; the pool may
//     hold at most one connection per worker plus one for /readyz.
//   - resident memory: the Go heap saws between the live heap and twice
//     it (GOGC=100), or the service's heap floor (--gc-heap-floor-mib, 12
//     MiB) while twice the live heap is below it, and a sample can fall
//     anywhere on the saw, so the largest early sample plus 25% and 8 MiB of
//     allocator slack; a leak of 100 bytes per request grows by far more
//     over make soak's 10 minutes.
func checkFlat(t *testing.T, samples []servicetest.Resources, workers int) {
	t.Helper()
	warm := samples[len(samples)/5:]
	ref, last := warm[0], warm[len(warm)-1]
	var early float64
	for _, s := range warm[:max(1, len(warm)/3)] {
		early = max(early, s.ResidentBytes)
	}
	if last.Goroutines > ref.Goroutines+float64(2*workers+goroutineTolerance) {
		t.Errorf("goroutines grew from %g to %g", ref.Goroutines, last.Goroutines)
	}
	if last.OpenFDs-last.PoolTotal > ref.OpenFDs-ref.PoolTotal+fdTolerance || last.PoolTotal > float64(workers+1) {
		t.Errorf("descriptors grew from %g (%g Redis) to %g (%g Redis)", ref.OpenFDs, ref.PoolTotal, last.OpenFDs, last.PoolTotal)
	}
	if limit := early*1.25 + 8<<20; last.ResidentBytes > limit {
		t.Errorf("resident memory grew from %.1f MiB (largest early) to %.1f MiB", early/(1<<20), last.ResidentBytes/(1<<20))
	}
}

// TestChaosSoak runs mixed traffic (creates, replays, conflicts, malformed
// bodies, bad tokens, unknown paths) for PLANTSTORE_SOAK, sampling the
// service's goroutines, memory and descriptors: they must stay flat, and
// every request must answer its expected status (no 5xx, no transport
// error; the expected 4xx are not errors).
func TestChaosSoak(t *testing.T) {
	d := soakDuration(t)
	interval := max(min(d/20, 10*time.Second), time.Second)
	const workers = 4

	redis := redistest.Start(t)
	s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: patientStore})
	for id := int64(1); id <= soakFixed; id++ {
		if r := s.Post(t, fixedBody(id)); r.Status != http.StatusOK {
			t.Fatalf("creating fixed plant %d: %d %s", id, r.Status, r.Body)
		}
	}

	start := time.Now()
	load := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: workers, Duration: d, FirstID: 1 << 40, Next: soakRequest})
	var samples []servicetest.Resources
	for tick := time.NewTicker(interval); ; {
		samples = append(samples, s.Resources(t))
		if time.Since(start)+interval > d {
			tick.Stop()
			break
		}
		<-tick.C
	}
	res := load.Wait()
	elapsed := time.Since(start)

	want := map[string]int{}
	for _, m := range soakMix {
		want[m.kind] = m.status
	}
	kind := func(r servicetest.Record) string {
		if r.Kind == "" {
			return "create"
		}
		return r.Kind
	}
	errs := res.Filter(func(r servicetest.Record) bool { return r.Err != nil || r.Status != want[kind(r)] })
	for i, r := range errs {
		if i == 5 {
			break
		}
		t.Errorf("%s request %d: %d %v %s", kind(r), r.ID, r.Status, r.Err, r.Reply)
	}
	if len(samples) < 5 {
		t.Fatalf("only %d samples in %v", len(samples), d)
	}
	checkFlat(t, samples, workers)

	ref, last := samples[len(samples)/5], samples[len(samples)-1]
	servicetest.Report(t, "soak", "duration=%s requests=%d rps=%.0f errors=%d samples=%d goroutines=%g->%g rss=%.1f->%.1fMiB fds=%g->%g p99=%s",
		elapsed.Round(time.Second), len(res.Records), float64(len(res.Records))/elapsed.Seconds(), len(errs), len(samples),
		ref.Goroutines, last.Goroutines, ref.ResidentBytes/(1<<20), last.ResidentBytes/(1<<20), ref.OpenFDs, last.OpenFDs,
		ms(res.Percentile(99, nil)))
	t.Logf("load: %v", res)
}
