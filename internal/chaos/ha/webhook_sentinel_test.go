package ha

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/api/client"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store"
)

// hookReceiver is a webhook subscriber that verifies each delivery's
// signature and counts the deliveries of each webhook-id, failing the test
// when one webhook-id carries two events or one event comes under two
// webhook-ids.
type hookReceiver struct {
	t      *testing.T
	secret string
	srv    *httptest.Server

	mu      sync.Mutex
	refuse  bool              // answer 503 to every delivery
	byID    map[string]int    // deliveries by webhook-id
	byEvent map[string]string // "type id" -> webhook-id
	event   map[string]string // webhook-id -> "type id"
	bad     int               // refused: bad signature
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	r := &hookReceiver{t: t, secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("ha-webhook-secret-of-32-bytes...")),
		byID: map[string]int{}, byEvent: map[string]string{}, event: map[string]string{}}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	ev, err := client.ParseWebhookEvent(r.secret, req.Header, body, 0)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.refuse {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
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
	w.WriteHeader(http.StatusNoContent)
}

func (r *hookReceiver) setRefuse(on bool) { r.mu.Lock(); r.refuse = on; r.mu.Unlock() }

// delivered reports the events received ("type id"), the deliveries in all
// and those refused for their signature.
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

// webhookArgs are the flags of a service delivering to r quickly, with a
// lease of 3 s: a delivery whose settling the failover undid comes back
// 3 s later rather than a minute.
func (r *hookReceiver) webhookArgs(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "subscribers")
	if err := os.WriteFile(path, []byte(r.srv.URL+"/hook "+r.secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--webhook-subscribers-file", path, "--webhook-allow-cidrs", "127.0.0.0/8",
		"--webhook-poll-interval", "20ms", "--webhook-backoff-base", "50ms", "--webhook-backoff-max", "500ms",
		"--webhook-stats-interval", "200ms", "--webhook-max-attempts", "1000",
		"--webhook-timeout", "2s", "--webhook-lease", "3s"}
}

// deleteLag is how many requests of the sentinel webhook load separate a
// create from the delete of its plant: far more than the workers, so the
// create has answered when its delete is sent.
const deleteLag = 800

// mixedRequest is request n of the sentinel webhook load: every fourth, once
// past deleteLag, deletes the plant created deleteLag-1 requests before;
// the others create plant n.
func mixedRequest(n int64) servicetest.Request {
	if n%4 == 0 && n >= deleteLag {
		id := n - deleteLag + 1
		return servicetest.Request{ID: id, Method: http.MethodDelete, Path: fmt.Sprintf("/plants/%d", id), Kind: "delete"}
	}
	return servicetest.CreateRequest(n)
}

// TestChaosWebhookSentinelFailover: the service with
// --redis-min-replica-acks 1 and a subscriber, on Sentinel (a master, two
// replicas), under a load of creates and deletes; the replicas are stopped
// and their links cut, the master is SIGKILLed, a replica is promoted (as in
// TestChaosSentinelFailover). Every change answered 200 (create) or 204
// (delete) must be on the new master and its event delivered, signed,
// after the failover: 0 lost; a duplicate only ever under the event's one
// webhook-id. No change may be acknowledged while no replica could
// acknowledge it.
//
// The outbox is what makes this hold: each change's event is written by the
// change's own script, which the pipelined WAIT covers, so a change a
// replica acknowledged has its event on that replica; the fan-outs, claims
// and settlings the old master made after the cut are lost with it, so the
// new master fans out and delivers those events again, under the same
// webhook-ids.
func TestChaosWebhookSentinelFailover(t *testing.T) {
	const resumeBound, refusing = 10 * time.Second, 300 * time.Millisecond
	before, window, after := servicetest.Pick(time.Second, 5*time.Second),
		servicetest.Pick(500*time.Millisecond, 1500*time.Millisecond), servicetest.Pick(2*time.Second, 10*time.Second)

	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Replicas: 2})
	f := newFailover(g)
	recv := newHookReceiver(t)
	s := servicetest.Start(t, binary, servicetest.Options{
		RedisAddr: strings.Join(g.SentinelAddrs(), ","),
		Extra: append([]string{"--redis-master-name", g.MasterName,
			"--redis-min-replica-acks", "1", "--redis-replica-ack-timeout", "200ms"}, recv.webhookArgs(t)...),
	})

	load := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: 8, Next: mixedRequest})
	// The receiver refuses every delivery from shortly before the cut
	// until the failover: the changes acknowledged then are on a replica
	// and undelivered when the master dies, and whatever the old master
	// did with their events (fanned out, claimed, retried) dies with it.
	time.Sleep(before - refusing)
	recv.setRefuse(true)
	time.Sleep(refusing)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	cut := f.openWindow(ctx, t)
	time.Sleep(window)
	deliveredBeforeKill, _, _ := recv.delivered()
	killed := f.killMaster()
	promoted := f.promoted(ctx)
	if promoted == nil {
		res := load.Stop()
		t.Fatalf("no failover within 20 s of the kill; load: %v\n%s", res, s.Logs)
	}
	promotedAfter := time.Since(killed)
	recv.setRefuse(false)
	time.Sleep(after)
	res := load.Stop()

	n503 := checkMixedAnswers(t, res)
	resumedAt, ok := firstOK(res, killed)
	if resume := resumedAt.Sub(killed); !ok || resume > resumeBound {
		t.Errorf("writes did not resume within %v of the master's death (resumed %v, after %v)", resumeBound, ok, resume)
	}

	// Acknowledged: creates answered 200 and deletes answered 204. None may
	// fall in the window, when no replica could acknowledge anything.
	want := map[string]bool{}
	created, deleted := map[int64]bool{}, map[int64]bool{}
	mayBeDeleted := map[int64]bool{} // a delete answered 503: it may have run
	windowAcked := 0
	for _, rec := range res.Records {
		switch {
		case rec.Kind == "delete" && rec.Status != http.StatusNoContent && rec.Status != http.StatusNotFound:
			mayBeDeleted[rec.ID] = true
			continue
		case rec.Kind == "create" && rec.Status == http.StatusOK:
			want[fmt.Sprintf("plant.created %d", rec.ID)] = true
			created[rec.ID] = true
		case rec.Kind == "delete" && rec.Status == http.StatusNoContent:
			want[fmt.Sprintf("plant.deleted %d", rec.ID)] = true
			deleted[rec.ID] = true
		default:
			continue
		}
		if rec.Start.After(cut) && rec.Start.Add(rec.Latency).Before(killed) {
			windowAcked++
		}
	}
	if windowAcked != 0 {
		t.Errorf("%d changes acknowledged while no replica could acknowledge them", windowAcked)
	}
	if len(deleted) == 0 {
		t.Fatalf("no delete acknowledged: the load exercised creates only; load: %v", res)
	}
	// The new master holds every acknowledged change.
	var lostChanges []string
	newMaster := promoted.Client()
	for id := range created {
		if !deleted[id] && !mayBeDeleted[id] && !exists(t, newMaster, id) {
			lostChanges = append(lostChanges, fmt.Sprintf("created %d", id))
		}
	}
	for id := range deleted {
		if exists(t, newMaster, id) {
			lostChanges = append(lostChanges, fmt.Sprintf("deleted %d", id))
		}
	}
	if len(lostChanges) > 0 {
		t.Errorf("%d acknowledged changes not on the new master: %v", len(lostChanges), lostChanges[:min(10, len(lostChanges))])
	}

	// Every acknowledged change's event is delivered after the failover.
	var missing []string
	drainStart := time.Now()
	servicetest.Eventually(time.Minute, 50*time.Millisecond, func() bool {
		got, _, _ := recv.delivered()
		missing = missing[:0]
		for key := range want {
			if !got[key] {
				missing = append(missing, key)
			}
		}
		return len(missing) == 0
	})
	drained := time.Since(drainStart)
	if len(missing) > 0 {
		t.Errorf("%d of %d acknowledged changes' events not delivered within a minute of the load's end, e.g. %v",
			len(missing), len(want), missing[:min(10, len(missing))])
	}
	// Acknowledged before the master died and delivered only after the
	// failover, by the new master's outbox.
	afterFailover := 0
	for _, rec := range res.Records {
		key := fmt.Sprintf("plant.%s %d", map[string]string{"create": "created", "delete": "deleted"}[rec.Kind], rec.ID)
		if want[key] && rec.Start.Add(rec.Latency).Before(killed) && !deliveredBeforeKill[key] {
			afterFailover++
		}
	}
	if afterFailover == 0 {
		t.Errorf("no change acknowledged before the kill was left to deliver after the failover: the scenario proved nothing about the outbox's survival")
	}
	time.Sleep(time.Second) // redeliveries still under way are counted too
	got, total, bad := recv.delivered()
	if bad != 0 {
		t.Errorf("%d deliveries with a bad signature", bad)
	}
	// Events beyond the acknowledged: changes answered 503 (written on the
	// master, no replica acknowledged them in time), whose event the old
	// master delivered before it died, or a replica received anyway.
	unacked := 0
	for key := range got {
		if !want[key] {
			unacked++
		}
	}
	servicetest.Report(t, "webhook-sentinel", "requests=%d acked_changes=%d (creates=%d deletes=%d) 503=%d acked_in_window=%d acked_lost=%d events_lost=%d delivered_events=%d deliveries=%d duplicates=%d (same webhook-id) unacked_events_delivered=%d delivered_before_kill=%d acked_before_kill_delivered_after_failover=%d promoted_after=%s drained_after_load=%s",
		len(res.Records), len(want), len(created), len(deleted), n503, windowAcked, len(lostChanges), len(missing),
		len(got), total, total-len(got), unacked, len(deliveredBeforeKill), afterFailover, ms(promotedAfter), ms(drained))
	t.Logf("load: %v", res)
}

// exists reports whether the plant id is stored on client's node.
func exists(t *testing.T, c redis.Cmdable, id int64) bool {
	t.Helper()
	n, err := c.Exists(t.Context(), store.PlantKey("plantstore:", id)).Result()
	if err != nil {
		t.Fatalf("reading plant %d: %v", id, err)
	}
	return n == 1
}

// checkMixedAnswers fails the test for any answer other than a create's
// 200, a delete's 204 or 404, or a well-formed 503 with Retry-After, and
// returns the count of 503s.
func checkMixedAnswers(t *testing.T, res *servicetest.LoadResult) int {
	t.Helper()
	bad := 0
	for _, rec := range res.Records {
		var why string
		switch {
		case rec.Err != nil:
			why = rec.Err.Error()
		case rec.Status == http.StatusServiceUnavailable:
			if rec.Code != 50301 || rec.RetryAfter == "" || rec.BodyErr != nil {
				why = fmt.Sprintf("503 with code %d, Retry-After %q (%v)", rec.Code, rec.RetryAfter, rec.BodyErr)
			}
		case rec.Kind == "create" && rec.Status == http.StatusOK,
			rec.Kind == "delete" && (rec.Status == http.StatusNoContent || rec.Status == http.StatusNotFound):
		default:
			why = fmt.Sprintf("status %d", rec.Status)
		}
		if why != "" {
			bad++
			if bad <= 5 {
				t.Errorf("%s %d: %s: %s", rec.Kind, rec.ID, why, rec.Reply)
			}
		}
	}
	return res.Count(http.StatusServiceUnavailable)
}
