package webhook

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/api/client"
	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/store"
)

// receiver is a subscriber that verifies every delivery and counts them by
// webhook-id; fail makes it answer 500.
type receiver struct {
	t      *testing.T
	secret string
	mu     sync.Mutex
	fail   bool
	delay  time.Duration // before each answer
	byID   map[string]int
	events map[string]client.WebhookEvent
	bad    int
}

func newReceiver(t *testing.T, secret string, fail bool) (*receiver, *httptest.Server) {
	r := &receiver{t: t, secret: secret, fail: fail, byID: map[string]int{}, events: map[string]client.WebhookEvent{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	time.Sleep(r.delay)
	body, _ := io.ReadAll(req.Body)
	ev, err := client.ParseWebhookEvent(r.secret, req.Header, body, 0)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	id := req.Header.Get("webhook-id")
	r.byID[id]++
	if prev, ok := r.events[id]; ok && (prev.Type != ev.Type || prev.Data.Id != ev.Data.Id || !prev.Timestamp.Equal(ev.Timestamp)) {
		r.t.Errorf("webhook-id %s carried two events: %+v and %+v", id, prev, ev)
	}
	r.events[id] = ev
	if r.fail {
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func (r *receiver) snapshot() (distinct, total, bad int, byID map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	byID = map[string]int{}
	for id, n := range r.byID {
		byID[id] = n
		total += n
	}
	return len(r.byID), total, r.bad, byID
}

func (r *receiver) setFail(f bool) { r.mu.Lock(); r.fail = f; r.mu.Unlock() }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWorker: every event reaches every subscriber, signed; a subscriber
// that fails gets its retries (same webhook-id, backoff) then dead letters,
// without a single redelivery to the other; a replay delivers the dead
// letters; each delivery's span links to the request that made the change.
func TestWorker(t *testing.T) {
	goodSecret, goodKey := testSecret(t, 'g')
	badSecret, badKey := testSecret(t, 'b')
	good, goodSrv := newReceiver(t, goodSecret, false)
	bad, badSrv := newReceiver(t, badSecret, true)
	gu, _ := url.Parse(goodSrv.URL + "/hook")
	bu, _ := url.Parse(badSrv.URL + "/hook")

	rec := store.NewRecording()
	subs := NewSubscribers([]Subscriber{
		{URL: gu, Secrets: []Secret{goodKey}, Key: "good", Name: "good"},
		{URL: bu, Secrets: []Secret{badKey}, Key: "bad", Name: "bad"},
	}, func(s []Subscriber) { rec.Set(len(s) > 0) })
	mem := store.NewMemory().RecordEvents(rec)

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	ctx := context.Background()
	reqCtx, reqSpan := tp.Tracer("test").Start(ctx, "POST /plants")
	const creates, deletes = 40, 10
	for id := range int64(creates) {
		if _, _, err := mem.Create(reqCtx, plant.Plant{ID: id, Name: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	reqSpan.End()
	for id := range int64(deletes) {
		if err := mem.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	const events = creates + deletes

	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	policy := Policy{MaxAttempts: 3, BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Lease: 10 * time.Second,
		PollInterval: 5 * time.Millisecond, InFlight: 8, PerSubscriber: 2, UnknownGrace: time.Second}
	sender := NewSender(NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}), nil, 2*time.Second, 2, "plantstore/test")
	w := NewWorker(mem.Outbox(), subs, sender, policy, metrics, tp, zap.NewNop())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(runCtx) }()
	defer func() { stop(); <-done }()

	eventually(t, "every event delivered to the good subscriber", func() bool { d, _, _, _ := good.snapshot(); return d == events })
	eventually(t, "every event dead-lettered for the failing one", func() bool {
		s, _ := mem.Outbox().Stats(ctx)
		return s.DeadLetters == events && s.Tasks == 0
	})
	_, total, badSigs, _ := good.snapshot()
	if total != events || badSigs != 0 {
		t.Fatalf("good subscriber: %d deliveries (%d badly signed) for %d events; the other's failures must not redeliver to it", total, badSigs, events)
	}
	_, total, badSigs, byID := bad.snapshot()
	if len(byID) != events || total != events*policy.MaxAttempts || badSigs != 0 {
		t.Fatalf("failing subscriber: %d ids, %d attempts; want %d each tried %d times", len(byID), total, events, policy.MaxAttempts)
	}
	if got := testutil.ToFloat64(metrics.deliveries.WithLabelValues("bad", OutcomeRetry)); got != float64(events*(policy.MaxAttempts-1)) {
		t.Errorf("retries counted %v", got)
	}
	if got := testutil.ToFloat64(metrics.deliveries.WithLabelValues("bad", OutcomeDeadLettered)); got != events {
		t.Errorf("dead letters counted %v", got)
	}
	if got := testutil.ToFloat64(metrics.deliveries.WithLabelValues("good", OutcomeDelivered)); got != events {
		t.Errorf("deliveries counted %v", got)
	}
	types := map[client.WebhookEventType]int{}
	good.mu.Lock()
	for _, ev := range good.events {
		types[ev.Type]++
	}
	good.mu.Unlock()
	if types[client.EventPlantCreated] != creates || types[client.EventPlantDeleted] != deletes {
		t.Errorf("event types %v", types)
	}

	linked := 0
	for _, s := range spans.Ended() {
		for _, l := range s.Links() {
			if l.SpanContext.SpanID() == reqSpan.SpanContext().SpanID() && l.SpanContext.TraceID() == reqSpan.SpanContext().TraceID() {
				linked++
			}
		}
	}
	// Each create's event: 1 delivery to good, 3 attempts to bad.
	if want := creates * (1 + policy.MaxAttempts); linked != want {
		t.Errorf("%d delivery spans link to the creating request's span, want %d", linked, want)
	}

	bad.setFail(false)
	n, err := mem.Outbox().Replay(ctx, nil)
	if err != nil || n != events {
		t.Fatalf("Replay = %d, %v", n, err)
	}
	eventually(t, "the replayed dead letters delivered", func() bool {
		_, total, _, _ := bad.snapshot()
		return total == events*(policy.MaxAttempts+1)
	})
}

// TestWorkerBusyWaitsForADelivery: with every slot taken the worker polls
// again when a delivery ends, not after PollInterval (an hour here): a
// backlog drains at the subscriber's pace.
func TestWorkerBusyWaitsForADelivery(t *testing.T) {
	secret, key := testSecret(t, 'g')
	got, srv := newReceiver(t, secret, false)
	// Each answer takes a moment, so the loop finds its slots all taken.
	got.delay = 20 * time.Millisecond
	u, _ := url.Parse(srv.URL + "/hook")
	rec := store.NewRecording()
	subs := NewSubscribers([]Subscriber{{URL: u, Secrets: []Secret{key}, Key: "s", Name: "s"}}, func(s []Subscriber) { rec.Set(len(s) > 0) })
	mem := store.NewMemory().RecordEvents(rec)
	const events = 20
	for id := range int64(events) {
		if _, _, err := mem.Create(context.Background(), plant.Plant{ID: id, Name: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	policy := Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: time.Second, Lease: time.Minute,
		PollInterval: time.Hour, InFlight: 2, PerSubscriber: 2, UnknownGrace: time.Second}
	sender := NewSender(NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}), nil, 2*time.Second, 2, "plantstore/test")
	w := NewWorker(mem.Outbox(), subs, sender, policy, metrics, sdktrace.NewTracerProvider(), zap.NewNop())
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { stop(); <-done }()
	eventually(t, "every event delivered, two at a time, and settled", func() bool {
		d, _, _, _ := got.snapshot()
		s, err := mem.Outbox().Stats(context.Background())
		return d == events && err == nil && s.Tasks == 0
	})
}

// TestWorkerUnknownSubscriber: a delivery to a subscriber this replica does
// not know waits (another replica may know it), then is dropped.
func TestWorkerUnknownSubscriber(t *testing.T) {
	rec := store.NewRecording()
	rec.Set(true)
	mem := store.NewMemory().RecordEvents(rec)
	ctx := context.Background()
	if _, _, err := mem.Create(ctx, plant.Plant{ID: 1, Name: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Outbox().FanOut(ctx, []string{"gone"}, 10); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics, _ := NewMetrics(reg)
	policy := Policy{MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, Lease: time.Minute,
		PollInterval: 5 * time.Millisecond, InFlight: 2, PerSubscriber: 1, UnknownGrace: 300 * time.Millisecond}
	w := NewWorker(mem.Outbox(), NewSubscribers(nil, nil), NewSender(NewGuard(nil), nil, time.Second, 1, "t"), policy, metrics,
		sdktrace.NewTracerProvider(), zap.NewNop())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(runCtx) }()
	defer func() { stop(); <-done }()
	time.Sleep(100 * time.Millisecond)
	if s, _ := mem.Outbox().Stats(ctx); s.Tasks != 1 {
		t.Fatalf("within the grace: %d tasks, want the delivery kept", s.Tasks)
	}
	eventually(t, "the delivery dropped after the grace", func() bool { s, _ := mem.Outbox().Stats(ctx); return s.Tasks == 0 })
	if got := testutil.ToFloat64(metrics.deliveries.WithLabelValues("removed", OutcomeUnsubscribed)); got != 1 {
		t.Fatalf("unsubscribed counted %v", got)
	}
}

// TestBackoff: the wait after attempt n is min(max, base·2^n) less a random
// part of up to half of it (docs/webhooks.md), and the jitter spans that range.
func TestBackoff(t *testing.T) {
	p := Policy{BackoffBase: time.Second, BackoffMax: time.Hour}
	for _, tt := range []struct {
		attempt int
		full    time.Duration // before the jitter
	}{
		{0, time.Second},
		{1, 2 * time.Second},
		{5, 32 * time.Second},
		{11, 2048 * time.Second},
		{12, time.Hour},
		{100, time.Hour},
		{math.MaxInt, time.Hour},
	} {
		lowest, highest := tt.full, time.Duration(0)
		for range 1000 {
			got := p.Backoff(tt.attempt)
			if got < tt.full/2 || got > tt.full {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", tt.attempt, got, tt.full/2, tt.full)
			}
			lowest, highest = min(lowest, got), max(highest, got)
		}
		if lowest > tt.full/2+tt.full/20 || highest < tt.full-tt.full/20 {
			t.Errorf("Backoff(%d) ranged over [%v, %v] in 1000 draws, want about [%v, %v]", tt.attempt, lowest, highest, tt.full/2, tt.full)
		}
	}
}

// The event body a receiver decodes is the contract's.
func TestBodyDecodes(t *testing.T) {
	b, _ := Body(testEvent())
	var ev client.WebhookEvent
	if err := json.Unmarshal(b, &ev); err != nil || ev.Data.Id != -5 || ev.Type != "plant.created" {
		t.Fatalf("%+v, %v", ev, err)
	}
}
