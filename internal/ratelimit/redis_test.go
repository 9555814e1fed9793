package ratelimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/longtest"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
)

// replica is one service's stack: bearer auth, the limiter on its own Redis
// client, and a handler counting what it serves per client.
type replica struct {
	handler http.Handler
	served  map[string]*atomic.Int64
}

func newReplica(t *testing.T, addr string, keyring *auth.Keyring, names []string) *replica {
	t.Helper()
	client, err := store.NewRedisClient(store.RedisOptions{Addrs: []string{addr}, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	r := &replica{served: map[string]*atomic.Int64{}}
	for _, n := range names {
		r.served[n] = &atomic.Int64{}
	}
	limiter := New(NewRedis(client, "test:"), auth.Rate{}, time.Second, zap.NewNop(), func(err error) { t.Errorf("fail open: %v", err) })
	r.handler = auth.Middleware(keyring, nil)(limiter.Middleware(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.served[auth.ClientFrom(req.Context()).Name].Add(1)
		w.WriteHeader(http.StatusNoContent)
	})))
	return r
}

// TestRedisBudgetAcrossReplicas: two replicas, each with its own Redis
// client, hammer one Redis with the requests of three clients for 10 s.
// Each limited client is admitted, over both replicas together, no more
// than its GCRA allows in the window (burst + rate × elapsed) plus 1%, and
// at least 80% of it; the clients do not draw on each other's budgets; the
// unlimited client is never refused.
func TestRedisBudgetAcrossReplicas(t *testing.T) {
	longtest.Mark(t, "several processes or Redis servers")
	const window = 10 * time.Second
	redis := redistest.Start(t)
	set, err := auth.ParseTokens(strings.NewReader(
		"tok-a name=a rate=100/s burst=50\n"+
			"tok-b name=b rate=600/m burst=5\n"+
			"tok-c name=c\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keyring := auth.NewKeyring(set)
	names := []string{"a", "b", "c"}
	replicas := []*replica{newReplica(t, redis.Addr, keyring, names), newReplica(t, redis.Addr, keyring, names)}

	var refused [3]atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	start := time.Now()
	for _, rep := range replicas {
		for i, token := range []string{"tok-a", "tok-a", "tok-a", "tok-b", "tok-b", "tok-c"} {
			wg.Go(func() {
				for ctx.Err() == nil {
					req := httptest.NewRequest(http.MethodGet, "/plants", nil)
					req.Header.Set("Authorization", "Bearer "+token)
					rec := httptest.NewRecorder()
					rep.handler.ServeHTTP(rec, req)
					switch rec.Code {
					case http.StatusNoContent:
					case http.StatusTooManyRequests:
						refused[strings.Index("abc", token[4:])].Add(1)
					default:
						t.Errorf("worker %d: status %d", i, rec.Code)
						return
					}
					// Each worker asks about 1000 times a second: far above
					// every limit, without saturating two cores.
					time.Sleep(time.Millisecond)
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)

	admitted := func(name string) int64 { return replicas[0].served[name].Load() + replicas[1].served[name].Load() }
	for _, c := range []struct {
		name         string
		rate, burst  float64
		refusedIndex int
	}{{"a", 100, 50, 0}, {"b", 10, 5, 1}} {
		allowed := c.burst + c.rate*elapsed.Seconds()
		got := float64(admitted(c.name))
		accuracy := got / allowed
		t.Logf("RATELIMIT client=%s admitted=%d allowed=%.0f accuracy=%.4f refused=%d replica_split=%d/%d elapsed=%v",
			c.name, int64(got), allowed, accuracy, refused[c.refusedIndex].Load(),
			replicas[0].served[c.name].Load(), replicas[1].served[c.name].Load(), elapsed.Round(time.Millisecond))
		// The bound that matters: together the replicas never admit more
		// than the client's limit (1% for the window's edges). Below it, a
		// budget is lost only while no request arrives for longer than the
		// burst lasts (0.5 s here): on a machine that busy the figure drops,
		// hence the looser lower bound.
		if accuracy > 1.01 || accuracy < 0.8 {
			t.Errorf("client %s: admitted %.0f over both replicas, %.2f%% of the %.0f its limit allows in %v; want 80-101%%",
				c.name, got, 100*accuracy, allowed, elapsed)
		}
		if replicas[0].served[c.name].Load() == 0 || replicas[1].served[c.name].Load() == 0 {
			t.Errorf("client %s: one replica admitted nothing: the test does not share a budget", c.name)
		}
		if refused[c.refusedIndex].Load() == 0 {
			t.Errorf("client %s: nothing refused: the demand did not exceed the limit", c.name)
		}
	}
	if refused[2].Load() != 0 || admitted("c") < 1000 {
		t.Errorf("unlimited client c: %d refused, %d admitted", refused[2].Load(), admitted("c"))
	}
}

// TestRedisMatchesMemory: the Redis store answers a burst as the
// in-process one does.
func TestRedisMatchesMemory(t *testing.T) {
	redis := redistest.Start(t)
	st := NewRedis(redis.Client(), "test:")
	r := rate(1, time.Hour, 3)
	for i, want := range []int{2, 1, 0} {
		d, err := st.Allow(t.Context(), "k", r)
		if err != nil || !d.Allowed || d.Remaining != want {
			t.Fatalf("request %d: %+v %v, want allowed with %d remaining", i+1, d, err, want)
		}
	}
	d, err := st.Allow(t.Context(), "k", r)
	if err != nil || d.Allowed || d.RetryAfter < 59*time.Minute || d.RetryAfter > time.Hour {
		t.Fatalf("past the burst: %+v %v, want refused for about an hour", d, err)
	}
	if keys, _ := redis.Client().Keys(t.Context(), "*").Result(); len(keys) != 1 || keys[0] != "rate:test:ratelimit:k" {
		t.Errorf("keys %v, want the one budget", keys)
	}
}
