package chaos

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/plantstore/plantstore/api/client"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
)

// hookReceiver is a webhook subscriber that verifies each delivery's
// signature and counts the deliveries of each webhook-id. Its mode can make
// it answer an error, or hold requests until released.
type hookReceiver struct {
	t      *testing.T
	secret string
	srv    *httptest.Server

	mu      sync.Mutex
	status  int           // answer when not 0 (a failure mode)
	hold    chan struct{} // not nil: requests wait until it is closed
	held    int           // requests waiting now
	byID    map[string]int
	event   map[string]string // webhook-id -> "type id"
	byEvent map[string]string // "type id" -> webhook-id
	bad     int               // deliveries refused: bad signature
	answers map[int]int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	r := &hookReceiver{t: t, secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("chaos-webhook-secret-of-32-bytes")),
		byID: map[string]int{}, event: map[string]string{}, byEvent: map[string]string{}, answers: map[int]int{}}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	ev, err := client.ParseWebhookEvent(r.secret, req.Header, body, 0)
	r.mu.Lock()
	if err != nil {
		r.bad++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if hold := r.hold; hold != nil {
		r.held++
		r.mu.Unlock()
		select {
		case <-hold:
		case <-req.Context().Done():
		}
		r.mu.Lock()
		r.held--
		if req.Context().Err() != nil {
			r.mu.Unlock() // the sender is gone: it never learns of an answer
			return
		}
	}
	status := r.status
	if status == 0 {
		status = http.StatusNoContent
		id, key := req.Header.Get("webhook-id"), fmt.Sprintf("%s %d", ev.Type, ev.Data.Id)
		r.byID[id]++
		if prev, ok := r.event[id]; ok && prev != key {
			r.t.Errorf("webhook-id %s carried %q and %q", id, prev, key)
		}
		r.event[id] = key
		if prev, ok := r.byEvent[key]; ok && prev != id {
			r.t.Errorf("event %q delivered under two webhook-ids, %s and %s", key, prev, id)
		}
		r.byEvent[key] = id
	}
	r.answers[status]++
	r.mu.Unlock()
	w.WriteHeader(status)
}

func (r *hookReceiver) setStatus(s int) { r.mu.Lock(); r.status = s; r.mu.Unlock() }

func (r *hookReceiver) holdAll() { r.mu.Lock(); r.hold = make(chan struct{}); r.mu.Unlock() }

func (r *hookReceiver) release() {
	r.mu.Lock()
	if r.hold != nil {
		close(r.hold)
		r.hold = nil
	}
	r.mu.Unlock()
}

func (r *hookReceiver) heldNow() int { r.mu.Lock(); defer r.mu.Unlock(); return r.held }

// delivered reports the events received ("type id"), the deliveries in
// all, and the deliveries refused for their signature.
func (r *hookReceiver) delivered() (events map[string]bool, total, bad int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events = map[string]bool{}
	for key := range r.byEvent {
		events[key] = true
	}
	for _, n := range r.byID {
		total += n
	}
	return events, total, r.bad
}

// subscribersFile writes a subscribers file naming the receiver.
func (r *hookReceiver) subscribersFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "subscribers")
	if err := os.WriteFile(path, []byte("# chaos\n"+r.srv.URL+"/hook "+r.secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// webhookArgs are the flags of a service delivering to r quickly.
func webhookArgs(t *testing.T, r *hookReceiver, extra ...string) []string {
	return append([]string{"--webhook-subscribers-file", r.subscribersFile(t), "--webhook-allow-cidrs", "127.0.0.0/8",
		"--webhook-poll-interval", "20ms", "--webhook-backoff-base", "50ms", "--webhook-backoff-max", "500ms",
		"--webhook-stats-interval", "200ms", "--webhook-max-attempts", "1000"}, extra...)
}

// waitDelivered waits until the receiver has every event of want.
func waitDelivered(t *testing.T, r *hookReceiver, want map[string]bool, within time.Duration) {
	t.Helper()
	var missing []string
	ok := servicetest.Eventually(within, 50*time.Millisecond, func() bool {
		got, _, _ := r.delivered()
		missing = missing[:0]
		for key := range want {
			if !got[key] {
				missing = append(missing, key)
			}
		}
		return len(missing) == 0
	})
	if !ok {
		t.Fatalf("%d of %d events not delivered within %v, e.g. %v", len(missing), len(want), within, missing[:min(5, len(missing))])
	}
}

func deleteRequest(id int64) servicetest.Request {
	return servicetest.Request{ID: id, Method: http.MethodDelete, Path: fmt.Sprintf("/plants/%d", id), Kind: "delete"}
}

// acknowledged are the events a load's answers promise: plant.created for
// each 200 create, plant.deleted for each 204 delete.
func acknowledged(res *servicetest.LoadResult) map[string]bool {
	out := map[string]bool{}
	for _, rec := range res.Records {
		switch {
		case rec.Kind == "create" && rec.Status == http.StatusOK:
			out[fmt.Sprintf("plant.created %d", rec.ID)] = true
		case rec.Kind == "delete" && rec.Status == http.StatusNoContent:
			out[fmt.Sprintf("plant.deleted %d", rec.ID)] = true
		}
	}
	return out
}

func metricSum(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	var sum float64
	for _, m := range families[name].GetMetric() {
		match := true
		for k, v := range labels {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			match = match && found
		}
		if match {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// TestChaosWebhookLoad: creates and deletes under load on two replicas
// sharing one Redis, each delivering: every acknowledged change is
// delivered, signed, at least once; duplicates only ever under the same
// webhook-id; one webhook-id per change, so the count of distinct ids is
// exact. It reports the create throughput against the same load on a
// service without subscribers.
func TestChaosWebhookLoad(t *testing.T) {
	creates := servicetest.Pick[int64](1000, 10000)
	deletes := creates / 5
	const workers = 8
	redis := redistest.Start(t)
	recv := newHookReceiver(t)

	// The same load on one replica, without and with a subscriber: the
	// overhead of recording events (and of delivering them, in the same
	// process on the same 2 cores) on the create path.
	// Every create and delete must be acknowledged for the counts to be
	// exact, so the store's deadlines are patient (patientStore): a 503
	// here would be the loaded machine's, not the webhooks'.
	plain := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: patientStore})
	start := time.Now()
	base := servicetest.StartLoad(plain, servicetest.LoadOptions{Workers: workers, MaxRequests: creates, FirstID: 1 << 40}).Wait()
	plainRate := float64(base.Count(http.StatusOK)) / time.Since(start).Seconds()
	plain.Kill()

	a := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: webhookArgs(t, recv, patientStore...)})
	start = time.Now()
	ra := servicetest.StartLoad(a, servicetest.LoadOptions{Workers: workers, MaxRequests: creates, FirstID: 1}).Wait()
	hookRate := float64(ra.Count(http.StatusOK)) / time.Since(start).Seconds()
	// A second replica joins; deletes of the first ids on it, and a repeat
	// of some creates (replays raise nothing).
	b := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: webhookArgs(t, recv, patientStore...)})
	rd := servicetest.StartLoad(b, servicetest.LoadOptions{Workers: workers / 2, MaxRequests: deletes, FirstID: 1, Next: deleteRequest}).Wait()
	rb := servicetest.StartLoad(b, servicetest.LoadOptions{Workers: workers / 2, MaxRequests: creates / 2, FirstID: 1 << 41}).Wait()
	rr := servicetest.StartLoad(a, servicetest.LoadOptions{Workers: workers / 2, MaxRequests: 100, FirstID: creates - 99}).Wait()

	want := acknowledged(ra)
	for k := range acknowledged(rb) {
		want[k] = true
	}
	for k := range acknowledged(rd) {
		want[k] = true
	}
	if len(want) != int(creates+creates/2+deletes) || rr.Count(http.StatusOK) != 100 {
		t.Fatalf("acknowledged %d changes of %d (creates on A %v, on B %v, deletes %v), replays %v", len(want), creates+creates/2+deletes, ra, rb, rd, rr)
	}
	deliveryStart := time.Now()
	waitDelivered(t, recv, want, 2*time.Minute)
	drained := time.Since(deliveryStart)
	time.Sleep(500 * time.Millisecond) // anything more would be an event too many
	got, total, bad := recv.delivered()
	if len(got) != len(want) || bad != 0 {
		t.Fatalf("%d distinct events delivered (%d refused signatures), want exactly %d", len(got), bad, len(want))
	}
	var byReplica [2]float64
	for i, s := range []*servicetest.Service{a, b} {
		families, _ := s.Metrics(t)
		byReplica[i] = metricSum(families, "plantstore_webhook_deliveries_total", map[string]string{"outcome": "delivered"})
	}
	if byReplica[0] == 0 || byReplica[1] == 0 {
		t.Errorf("deliveries by replica %v: both replicas should share the work", byReplica)
	}
	servicetest.Report(t, "webhook-load", "changes=%d distinct_delivered=%d deliveries=%d duplicates=%d by_replica=%v drained_after_load=%v create_rate_plain=%.0f/s create_rate_webhooks=%.0f/s ratio=%.2f",
		len(want), len(got), total, total-len(got), byReplica, drained.Round(time.Millisecond), plainRate, hookRate, hookRate/plainRate)
}

// TestChaosWebhookReceiverDown: a receiver answering 500, then timing out,
// then back: every event is delivered once it is back, the retries are
// visible in the metrics, and the backlog drains to 0.
func TestChaosWebhookReceiverDown(t *testing.T) {
	redis := redistest.Start(t)
	recv := newHookReceiver(t)
	s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: webhookArgs(t, recv, "--webhook-timeout", "300ms", "--webhook-lease", "2s")})
	recv.setStatus(http.StatusInternalServerError)
	res := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: 4, MaxRequests: 200, FirstID: 1}).Wait()
	want := acknowledged(res)
	time.Sleep(time.Second)
	recv.setStatus(0)
	recv.holdAll() // slow: every request times out
	time.Sleep(time.Second)
	families, _ := s.Metrics(t)
	backlog := metricSum(families, "plantstore_webhook_backlog", map[string]string{"queue": "deliveries"})
	age := metricSum(families, "plantstore_webhook_oldest_event_age_seconds", nil)
	recv.release()
	recovered := time.Now()
	waitDelivered(t, recv, want, time.Minute)
	took := time.Since(recovered)
	families, _ = s.Metrics(t)
	retries := metricSum(families, "plantstore_webhook_deliveries_total", map[string]string{"outcome": "retry"})
	if retries == 0 || backlog == 0 || age < 1 {
		t.Errorf("while the receiver failed: retries %v, backlog %v, oldest age %v s; want all above 0 (1 s)", retries, backlog, age)
	}
	if !servicetest.Eventually(5*time.Second, 100*time.Millisecond, func() bool {
		f, _ := s.Metrics(t)
		return metricSum(f, "plantstore_webhook_backlog", nil) == 0
	}) {
		t.Error("the backlog metric did not drain to 0")
	}
	recv.mu.Lock()
	answers := fmt.Sprint(recv.answers)
	recv.mu.Unlock()
	servicetest.Report(t, "webhook-receiver-down", "events=%d retries=%.0f backlog_during=%.0f oldest_age_during=%.1fs delivered_after_recovery=%v answers=%s",
		len(want), retries, backlog, age, took.Round(time.Millisecond), answers)
}

// TestChaosWebhookRedisKill: Redis killed (SIGKILL) under a load of creates
// and restarted from its AOF (the chart's fsync policy): every acknowledged
// create's event is delivered.
func TestChaosWebhookRedisKill(t *testing.T) {
	redis := redistest.Start(t, chartRedisArgs(t)...)
	recv := newHookReceiver(t)
	// A lease of 3 s: a delivery claimed just before the kill, whose
	// settling then failed, comes back 3 s later rather than a minute.
	s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: webhookArgs(t, recv, "--webhook-lease", "3s", "--webhook-timeout", "2s")})
	load := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: 4, FirstID: 1})
	time.Sleep(servicetest.Pick(time.Second, 5*time.Second))
	redis.Stop()
	time.Sleep(servicetest.Pick(time.Second, 5*time.Second))
	redis.Restart()
	time.Sleep(servicetest.Pick(time.Second, 5*time.Second))
	res := load.Stop()
	want := acknowledged(res)
	if len(want) == 0 || res.Count(http.StatusServiceUnavailable) == 0 {
		t.Fatalf("load across the kill: %v", res)
	}
	waitDelivered(t, recv, want, time.Minute)
	got, _, _ := recv.delivered()
	// Events of creates whose answer was lost (a 503 after the script ran)
	// may be delivered too: at least once, never fewer.
	servicetest.Report(t, "webhook-redis-kill", "acknowledged=%d delivered=%d lost=0 503s=%d", len(want), len(got), res.Count(http.StatusServiceUnavailable))
}

// TestChaosWebhookReplicaKill: a replica killed (SIGKILL) while its
// deliveries are under way: another replica delivers them once their lease
// ends.
func TestChaosWebhookReplicaKill(t *testing.T) {
	redis := redistest.Start(t)
	recv := newHookReceiver(t)
	args := webhookArgs(t, recv, "--webhook-timeout", "5s", "--webhook-lease", "6s", "--webhook-subscriber-concurrency", "16")
	a := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: args})
	recv.holdAll()
	res := servicetest.StartLoad(a, servicetest.LoadOptions{Workers: 4, MaxRequests: 50, FirstID: 1}).Wait()
	want := acknowledged(res)
	if !servicetest.Eventually(5*time.Second, 20*time.Millisecond, func() bool { return recv.heldNow() >= 10 }) {
		t.Fatalf("replica A holds %d deliveries under way, want 10 or more", recv.heldNow())
	}
	inFlight := recv.heldNow()
	a.Kill()
	killed := time.Now()
	// The receiver sees A's connections close before it answers anything.
	if !servicetest.Eventually(5*time.Second, 10*time.Millisecond, func() bool { return recv.heldNow() == 0 }) {
		t.Fatalf("the receiver still holds %d requests of the killed replica", recv.heldNow())
	}
	if got, _, _ := recv.delivered(); len(got) != 0 {
		t.Fatalf("%d events delivered before the kill, want 0 (all held)", len(got))
	}
	recv.release()
	b := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: args})
	waitDelivered(t, recv, want, 30*time.Second)
	took := time.Since(killed)
	// B counts a delivery once its answer is in, after the receiver has
	// recorded it: the last count may lag waitDelivered.
	var byB float64
	servicetest.Eventually(5*time.Second, 20*time.Millisecond, func() bool {
		families, _ := b.Metrics(t)
		byB = metricSum(families, "plantstore_webhook_deliveries_total", map[string]string{"outcome": "delivered"})
		return byB == float64(len(want))
	})
	if byB != float64(len(want)) {
		t.Errorf("replica B delivered %v, want all %d (A delivered none)", byB, len(want))
	}
	servicetest.Report(t, "webhook-replica-kill", "events=%d under_way_at_kill=%d delivered_by_b=%.0f all_delivered_after=%v",
		len(want), inFlight, byB, took.Round(time.Millisecond))
}
