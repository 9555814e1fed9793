package store_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/api/client"
	"github.com/plantstore/plantstore/internal/longtest"
	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/webhook"
)

// clusterHook is a subscriber of TestOutboxCluster: it verifies each
// delivery and records the events ("type id") by webhook-id; failing, it
// answers 500.
type clusterHook struct {
	t      *testing.T
	secret string
	srv    *httptest.Server

	mu      sync.Mutex
	failing bool
	events  map[string]string // webhook-id -> "type id"
	total   int
}

func newClusterHook(t *testing.T, seed string, failing bool) *clusterHook {
	h := &clusterHook{t: t, secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte(seed+strings.Repeat("-", 32-len(seed)))),
		failing: failing, events: map[string]string{}}
	h.srv = httptest.NewServer(h)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *clusterHook) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	ev, err := client.ParseWebhookEvent(h.secret, req.Header, body, 0)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.t.Errorf("a delivery failed verification: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if h.failing {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	id, key := req.Header.Get("webhook-id"), fmt.Sprintf("%s %d", ev.Type, ev.Data.Id)
	if prev, ok := h.events[id]; ok && prev != key {
		h.t.Errorf("webhook-id %s carried %q and %q", id, prev, key)
	}
	h.events[id] = key
	h.total++
}

func (h *clusterHook) setFailing(f bool) { h.mu.Lock(); h.failing = f; h.mu.Unlock() }

// received returns the distinct events delivered, and the deliveries in all.
func (h *clusterHook) received() (map[string]bool, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	got := map[string]bool{}
	for _, key := range h.events {
		got[key] = true
	}
	return got, h.total
}

// TestOutboxCluster: on a real three-master Cluster (each master with a
// replica), the create and delete scripts with recording on, with and
// without --redis-min-replica-acks, record each change's event in its
// shard's stream on the master of the shard's slot, so the events spread
// over every master; a delivery worker on the Cluster finds every shard's
// events, delivers each once to a subscriber that answers, and dead-letters
// them for one that fails; the dead letters, on every master, are listed
// and replayed to it.
func TestOutboxCluster(t *testing.T) {
	longtest.Mark(t, "several processes or Redis servers")
	c := redistest.StartCluster(t, 3)
	for _, m := range slices.Clone(c.Masters) {
		c.AddReplica(m)
	}
	redisClient := newClient(t, store.RedisOptions{Addrs: c.Addrs()})
	rec := store.NewRecording()
	rec.Set(true)
	plain := store.NewRedis(redisClient, "plantstore:").RecordEvents(rec)
	acked := store.NewRedis(redisClient, "plantstore:").WaitForReplicas(1, patientAcks).RecordEvents(rec)
	repo := func(id int64) *store.Redis {
		if id%2 == 0 {
			return plain
		}
		return acked
	}
	ctx := context.Background()

	const plants = 96 // six per shard
	want := map[string]bool{}
	for id := int64(1); id <= plants; id++ {
		if outcome, _, err := create(repo(id), id, "Monstera"); err != nil || outcome != plant.Created {
			t.Fatalf("Create(%d) = %v, %v; want Created", id, outcome, err)
		}
		want[fmt.Sprintf("%s %d", store.EventCreated, id)] = true
	}
	for id := int64(3); id <= plants; id += 3 {
		if err := repo(id).Delete(ctx, id); err != nil {
			t.Fatalf("Delete(%d) = %v", id, err)
		}
		want[fmt.Sprintf("%s %d", store.EventDeleted, id)] = true
	}
	// A replay, a conflict and a missing plant record nothing.
	for _, r := range []*store.Redis{plain, acked} {
		if outcome, _, err := create(r, 1, "Monstera"); err != nil || outcome != plant.Replayed {
			t.Fatalf("replay = %v, %v", outcome, err)
		}
		if _, _, err := create(r, 2, "Other"); !errors.Is(err, plant.ErrConflict) {
			t.Fatalf("conflict = %v", err)
		}
		if err := r.Delete(ctx, 3); !errors.Is(err, plant.ErrNotFound) {
			t.Fatalf("Delete of a deleted plant = %v", err)
		}
	}

	// Each shard's events are on the master of its slot, and every master
	// holds some.
	perMaster := map[string]int64{}
	var recorded int64
	for s := range store.Shards {
		key := plain.EventsKey(s)
		slot, err := c.Masters[0].Client().ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.MasterOfSlot(ctx, int(slot))
		if err != nil {
			t.Fatal(err)
		}
		n, err := m.Client().XLen(ctx, key).Result()
		if err != nil {
			t.Fatalf("XLEN %s on the master of slot %d: %v", key, slot, err)
		}
		perMaster[m.Addr] += n
		recorded += n
	}
	if recorded != int64(len(want)) || len(perMaster) != len(c.Masters) {
		t.Fatalf("events by master %v (%d in all), want %d spread over all %d masters", perMaster, recorded, len(want), len(c.Masters))
	}
	for addr, n := range perMaster {
		if n == 0 {
			t.Fatalf("master %s holds no event: %v", addr, perMaster)
		}
	}
	t.Logf("%d events by master: %v", recorded, perMaster)
	outbox := plain.Outbox()
	if s := stats(t, outbox); s.Events != int64(len(want)) || s.Tasks != 0 {
		t.Fatalf("Stats = %+v, want %d events", s, len(want))
	}

	// A worker delivers them: each once to the subscriber that answers;
	// after two attempts each, to the dead letters for the one that fails.
	good := newClusterHook(t, "cluster-good", false)
	bad := newClusterHook(t, "cluster-bad", true)
	list, err := webhook.ParseSubscribers(strings.NewReader(good.srv.URL + "/hook " + good.secret + "\n" + bad.srv.URL + "/hook " + bad.secret + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	allow, err := webhook.ParseAllow([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := webhook.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	policy := webhook.Policy{MaxAttempts: 2, BackoffBase: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
		Lease: time.Minute, PollInterval: 20 * time.Millisecond, InFlight: 16, PerSubscriber: 8, UnknownGrace: time.Minute}
	worker := webhook.NewWorker(outbox, webhook.NewSubscribers(list, nil), webhook.NewSender(webhook.NewGuard(allow), nil, 5*time.Second, 8, "test"),
		policy, metrics, noop.NewTracerProvider(), zap.NewNop())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); worker.Run(runCtx) }()
	defer func() { stop(); <-done }()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; outbox %+v", what, stats(t, outbox))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("every event delivered and every failing delivery dead-lettered", func() bool {
		got, _ := good.received()
		s := stats(t, outbox)
		return len(got) == len(want) && s.Events == 0 && s.Tasks == 0 && s.DeadLetters == int64(len(want))
	})
	got, total := good.received()
	if !maps.Equal(got, want) || total != len(want) {
		t.Fatalf("received %d events in %d deliveries, want exactly the %d changes once each", len(got), total, len(want))
	}

	// The dead letters are on every master; all are listed, and replayed.
	dead, err := outbox.DeadLetters(ctx, 1000)
	if err != nil || len(dead) != len(want) {
		t.Fatalf("DeadLetters = %d, %v; want %d", len(dead), err, len(want))
	}
	shards := map[int]bool{}
	for _, d := range dead {
		shards[d.Shard] = true
	}
	if len(shards) != store.Shards {
		t.Fatalf("dead letters in %d shards, want all %d", len(shards), store.Shards)
	}
	bad.setFailing(false)
	if n, err := outbox.Replay(ctx, nil); err != nil || n != len(want) {
		t.Fatalf("Replay = %d, %v; want %d", n, err, len(want))
	}
	waitFor("every replayed dead letter delivered", func() bool {
		got, _ := bad.received()
		s := stats(t, outbox)
		return len(got) == len(want) && s.Tasks == 0 && s.DeadLetters == 0
	})
	if got, _ := bad.received(); !maps.Equal(got, want) {
		t.Fatalf("the replayed subscriber received %d events, want the %d changes", len(got), len(want))
	}
}
