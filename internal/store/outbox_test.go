package store_test

import (
	"context"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
)

// outboxRepo is a store whose changes record events in an outbox.
type outboxRepo interface {
	plant.Repository
	store.Outbox
}

type memoryWithOutbox struct {
	*store.Memory
	*store.MemoryOutbox
}

type redisWithOutbox struct {
	*store.Redis
	*store.RedisOutbox
}

func outboxStores(t *testing.T) map[string]func(t *testing.T, rec *store.Recording) outboxRepo {
	srv := redistest.Start(t)
	return map[string]func(t *testing.T, rec *store.Recording) outboxRepo{
		"embedded": func(t *testing.T, rec *store.Recording) outboxRepo {
			m := store.NewMemory().RecordEvents(rec)
			return memoryWithOutbox{m, m.Outbox()}
		},
		"redis": func(t *testing.T, rec *store.Recording) outboxRepo {
			if err := srv.Client().FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			r := newRedisRepo(t, srv.Addr).RecordEvents(rec)
			return redisWithOutbox{r, r.Outbox()}
		},
	}
}

func stats(t *testing.T, o store.Outbox) store.OutboxStats {
	t.Helper()
	s, err := o.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var eventID = regexp.MustCompile(`^msg_[0-9a-f]{32}$`)

// TestOutboxRecording: a change records its event exactly when it changed
// something and recording is on; a replay, a conflict and a delete of a
// missing plant record nothing.
func TestOutboxRecording(t *testing.T) {
	for name, newRepo := range outboxStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rec := store.NewRecording()
			r := newRepo(t, rec)
			tag := "green"
			if _, _, err := r.Create(ctx, plant.Plant{ID: 1, Name: "off"}); err != nil {
				t.Fatal(err)
			}
			if err := r.Delete(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if s := stats(t, r); s.Events != 0 || s.Tasks != 0 {
				t.Fatalf("recording off: outbox holds %+v, want nothing", s)
			}

			rec.Set(true)
			tp := sdktrace.NewTracerProvider()
			spanCtx, span := tp.Tracer("test").Start(ctx, "request")
			if _, _, err := r.Create(spanCtx, plant.Plant{ID: -7, Name: "Fern", Tag: &tag}); err != nil {
				t.Fatal(err)
			}
			span.End()
			if _, out, err := r.Create(ctx, plant.Plant{ID: -7, Name: "Fern", Tag: &tag}); err != nil || out != plant.Replayed {
				t.Fatalf("replay = %v, %v", out, err)
			}
			if _, _, err := r.Create(ctx, plant.Plant{ID: -7, Name: "Other"}); err == nil {
				t.Fatal("conflict accepted")
			}
			if err := r.Delete(ctx, -7); err != nil {
				t.Fatal(err)
			}
			if err := r.Delete(ctx, -7); err == nil {
				t.Fatal("second delete found the plant")
			}
			s := stats(t, r)
			if s.Events != 2 || s.Tasks != 0 || s.Oldest.IsZero() || time.Since(s.Oldest) > time.Minute {
				t.Fatalf("outbox holds %+v, want 2 events (created, deleted) made just now", s)
			}

			subs := []string{"aaaa", "bbbb"}
			if n, err := r.FanOut(ctx, subs, 100); err != nil || n != 2 {
				t.Fatalf("FanOut = %d, %v; want 2 events", n, err)
			}
			if s := stats(t, r); s.Events != 0 || s.Tasks != 4 {
				t.Fatalf("after fan-out: %+v, want 0 events and 4 tasks", s)
			}
			tasks, err := r.Claim(ctx, time.Now(), 100, time.Minute)
			if err != nil || len(tasks) != 4 {
				t.Fatalf("Claim = %d tasks, %v; want 4", len(tasks), err)
			}
			ids := map[string]map[string]string{} // event id -> subscriber -> type
			for _, task := range tasks {
				ev := task.Event
				if !eventID.MatchString(ev.ID) || task.Attempt != 0 || ev.Plant.ID != -7 || ev.Plant.Name != "Fern" ||
					ev.Plant.Tag == nil || *ev.Plant.Tag != "green" {
					t.Errorf("task %+v: want a first attempt about plant -7 Fern/green with a msg_ id", task)
				}
				if ids[ev.ID] == nil {
					ids[ev.ID] = map[string]string{}
				}
				ids[ev.ID][task.Subscriber] = ev.Type
				wantTP := ""
				if ev.Type == store.EventCreated {
					wantTP = "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
				}
				if ev.TraceParent != wantTP {
					t.Errorf("%s traceparent = %q, want %q", ev.Type, ev.TraceParent, wantTP)
				}
			}
			if len(ids) != 2 {
				t.Fatalf("events = %v, want two ids each for both subscribers", ids)
			}
			types := []string{}
			for _, bySub := range ids {
				if len(bySub) != 2 || bySub["aaaa"] != bySub["bbbb"] {
					t.Fatalf("events = %v, want each for both subscribers", ids)
				}
				types = append(types, bySub["aaaa"])
			}
			slices.Sort(types)
			if !slices.Equal(types, []string{store.EventCreated, store.EventDeleted}) {
				t.Fatalf("event types = %v", types)
			}
		})
	}
}

// TestOutboxLifecycle: a claimed task is leased (no second claim sees it
// until the lease ends, when any claim does: a dead replica's work comes
// back), and settles once: done, retried with its attempt counted, buried
// and replayed.
func TestOutboxLifecycle(t *testing.T) {
	for name, newRepo := range outboxStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rec := store.NewRecording()
			rec.Set(true)
			r := newRepo(t, rec)
			for id := range int64(3) {
				if _, _, err := r.Create(ctx, plant.Plant{ID: id * 1000, Name: "p"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.FanOut(ctx, []string{"s1"}, 100); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			lease := 30 * time.Second
			tasks, err := r.Claim(ctx, now, 10, lease)
			if err != nil || len(tasks) != 3 {
				t.Fatalf("Claim = %d, %v; want 3", len(tasks), err)
			}
			if again, _ := r.Claim(ctx, now.Add(lease-time.Second), 10, lease); len(again) != 0 {
				t.Fatalf("a leased task was claimed again within its lease: %d", len(again))
			}
			reclaimed, err := r.Claim(ctx, now.Add(lease+time.Second), 10, lease)
			if err != nil || len(reclaimed) != 3 {
				t.Fatalf("after the lease: Claim = %d, %v; want the 3 tasks back", len(reclaimed), err)
			}
			done, retried, buried := tasks[0], tasks[1], tasks[2]
			if err := r.Done(ctx, done); err != nil {
				t.Fatal(err)
			}
			if err := r.Retry(ctx, retried, "HTTP 500", now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			// The reclaimer settles the same tasks: nothing happens twice.
			for _, task := range reclaimed {
				if err := r.Retry(ctx, task, "late", now.Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			if s := stats(t, r); s.Tasks != 2 {
				t.Fatalf("tasks = %d, want 2 (one retried once, one left to bury; a settled task settles once)", s.Tasks)
			}
			// retried is due in an hour; the third (retried by the reclaimer
			// only) too.
			if due, _ := r.Claim(ctx, now.Add(time.Minute), 10, lease); len(due) != 0 {
				t.Fatalf("a retry ran before it was due: %d", len(due))
			}
			later, err := r.Claim(ctx, now.Add(2*time.Hour), 10, lease)
			if err != nil || len(later) != 2 {
				t.Fatalf("Claim after the retries' time = %d, %v", len(later), err)
			}
			for _, task := range later {
				if task.Attempt != 1 || (task.LastError != "HTTP 500" && task.LastError != "late") {
					t.Fatalf("retried task = attempt %d, error %q; want 1 and its cause", task.Attempt, task.LastError)
				}
				if task.Event.ID == buried.Event.ID {
					buried = task
				}
			}
			if err := r.Bury(ctx, buried, "gave up"); err != nil {
				t.Fatal(err)
			}
			dead, err := r.DeadLetters(ctx, 10)
			if err != nil || len(dead) != 1 || dead[0].Event.ID != buried.Event.ID || dead[0].Attempt != 2 ||
				dead[0].LastError != "gave up" || dead[0].ID == "" {
				t.Fatalf("dead letters = %+v, %v; want the buried task after 2 attempts", dead, err)
			}
			if s := stats(t, r); s.DeadLetters != 1 || s.Tasks != 1 {
				t.Fatalf("stats = %+v, want 1 dead letter, 1 task", s)
			}
			if n, err := r.Replay(ctx, []string{dead[0].ID}); err != nil || n != 1 {
				t.Fatalf("Replay = %d, %v", n, err)
			}
			if n, err := r.Replay(ctx, []string{dead[0].ID}); err != nil || n != 0 {
				t.Fatalf("second Replay = %d, %v; want 0", n, err)
			}
			back, err := r.Claim(ctx, time.Now(), 10, lease)
			if err != nil || len(back) != 1 || back[0].Event.ID != buried.Event.ID || back[0].Attempt != 0 {
				t.Fatalf("after replay: %+v, %v; want the event as a first attempt", back, err)
			}
			if err := r.Bury(ctx, back[0], "again"); err != nil {
				t.Fatal(err)
			}
			if n, err := r.Replay(ctx, nil); err != nil || n != 1 {
				t.Fatalf("Replay all = %d, %v", n, err)
			}
			if s := stats(t, r); s.DeadLetters != 0 {
				t.Fatalf("dead letters after replay all = %d", s.DeadLetters)
			}
		})
	}
}

// TestOutboxNoDoubleClaim: workers claiming at once never get the same
// task within a lease.
func TestOutboxNoDoubleClaim(t *testing.T) {
	for name, newRepo := range outboxStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rec := store.NewRecording()
			rec.Set(true)
			r := newRepo(t, rec)
			const n = 200
			for id := range int64(n) {
				if _, _, err := r.Create(ctx, plant.Plant{ID: id, Name: "p"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.FanOut(ctx, []string{"s1"}, n); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			seen := map[string]int{}
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for {
						tasks, err := r.Claim(ctx, time.Now(), 3, time.Minute)
						if err != nil {
							t.Error(err)
							return
						}
						if len(tasks) == 0 {
							return
						}
						mu.Lock()
						for _, task := range tasks {
							seen[task.Event.ID]++
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if len(seen) != n {
				t.Fatalf("claimed %d distinct tasks, want %d", len(seen), n)
			}
			for id, c := range seen {
				if c != 1 {
					t.Fatalf("task %s claimed %d times within its lease", id, c)
				}
			}
		})
	}
}
