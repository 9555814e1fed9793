package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store"
)

const defaultExitWait = 10 * time.Second

// exec_ runs the binary to completion and returns its combined output.
func exec_(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = servicetest.CleanEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// concurrently runs f(0) to f(n-1) in n goroutines released together, so
// that the requests really overlap, and waits for all of them.
func concurrently(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}

// TestConcurrentDistinctCreates: 1,000 concurrent creates with distinct ids
// all answer 200 and are all in Redis.
func TestConcurrentDistinctCreates(t *testing.T) {
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr})
	const n = 1000
	statuses := make([]int, n)
	concurrently(n, func(i int) {
		statuses[i] = s.Post(t, fmt.Sprintf(`{"id": %d, "name": "plant %d"}`, 100000+i, i)).Status
	})
	for i, st := range statuses {
		if st != 200 {
			t.Fatalf("create %d answered %d", i, st)
		}
	}
	keys := plantKeys(t, redis.Client())
	if len(keys) != n {
		t.Fatalf("%d plants in Redis, want %d", len(keys), n)
	}
	for i := range n {
		v, err := redis.Client().Get(t.Context(), store.PlantKey("plantstore:", int64(100000+i))).Result()
		if err != nil || v != fmt.Sprintf(`{"name":"plant %d"}`, i) {
			t.Fatalf("plant %d in Redis = %q, %v", 100000+i, v, err)
		}
	}
}

// TestConcurrentSameID: 32 concurrent creates of one id with 4 bodies store
// exactly one; every answer is 200 for that body or 409 for the others.
func TestConcurrentSameID(t *testing.T) {
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr})
	bodies := []string{
		`{"id": 7, "name": "A"}`, `{"id": 7, "name": "B"}`,
		`{"id": 7, "name": "C", "tag": "c"}`, `{"id": 7, "name": "C"}`,
	}
	const n = 32
	replies := make([]reply, n)
	concurrently(n, func(i int) { replies[i] = s.Post(t, bodies[i%len(bodies)]) })

	stored, err := redis.Client().Get(t.Context(), store.PlantKey("plantstore:", 7)).Result()
	if err != nil {
		t.Fatal(err)
	}
	winner := -1
	for i, b := range []string{`{"name":"A"}`, `{"name":"B"}`, `{"name":"C","tag":"c"}`, `{"name":"C"}`} {
		if stored == b {
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("stored %s is none of the bodies", stored)
	}
	var ok, conflicts int
	for i, r := range replies {
		switch {
		case i%len(bodies) == winner && r.Status == 200:
			if got := strings.TrimSpace(string(r.Body)); got != stored {
				t.Fatalf("200 body %s, want the stored %s", got, stored)
			}
			ok++
		case i%len(bodies) != winner && r.Status == 409:
			if code := r.ErrorCode(t); code != 40901 {
				t.Fatalf("409 with code %d", code)
			}
			conflicts++
		default:
			t.Fatalf("request %d (body %d, winner %d) answered %d: %s", i, i%len(bodies), winner, r.Status, r.Body)
		}
	}
	if ok != n/len(bodies) || conflicts != n-n/len(bodies) {
		t.Fatalf("%d successes and %d conflicts, want %d and %d", ok, conflicts, n/len(bodies), n-n/len(bodies))
	}
}

// TestRedisOutage: with Redis stopped a POST answers 503 with Retry-After
// within the store timeout while /readyz keeps passing (the store is shared:
// an outage must not take every replica out of the Service); when Redis
// returns the service serves again without a restart.
func TestRedisOutage(t *testing.T) {
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr})
	if r := s.Post(t, `{"id": 1, "name": "before"}`); r.Status != 200 {
		t.Fatalf("before the outage: %d %s", r.Status, r.Body)
	}
	redis.Stop()

	for i := range 5 {
		start := time.Now()
		r := s.Post(t, fmt.Sprintf(`{"id": %d, "name": "during"}`, 10+i))
		took := time.Since(start)
		if r.Status != 503 || r.ErrorCode(t) != 50301 || r.Header.Get("Retry-After") == "" {
			t.Fatalf("during the outage: %d %v %s", r.Status, r.Header, r.Body)
		}
		// --store-timeout is 500ms; allow for scheduling on a loaded machine.
		if took > 2*time.Second {
			t.Fatalf("503 took %v, far beyond the 500ms store timeout", took)
		}
	}
	resp, err := http.Get(s.Admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "store unreachable") {
		t.Fatalf("/readyz during the outage = %d %q, want 200 saying the store is unreachable", resp.StatusCode, body)
	}
	if resp, err := http.Get(s.Admin + "/livez"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/livez during the outage = %v %v, want 200: the process is alive", resp, err)
	}

	redis.Restart()
	s.WaitReady(t)
	if r := s.Post(t, `{"id": 2, "name": "after"}`); r.Status != 200 {
		t.Fatalf("after the outage: %d %s", r.Status, r.Body)
	}

	// A hung Redis (connections open, nothing answers) is cut at the store
	// timeout too, not left to hang the request.
	redis.Pause()
	start := time.Now()
	r := s.Post(t, `{"id": 3, "name": "hung"}`)
	took := time.Since(start)
	if r.Status != 503 || r.ErrorCode(t) != 50301 {
		t.Fatalf("with Redis hung: %d %s", r.Status, r.Body)
	}
	if took < 400*time.Millisecond || took > 2*time.Second {
		t.Fatalf("with Redis hung the 503 came after %v, want about the 500ms store timeout", took)
	}
	redis.Resume()
	s.WaitReady(t)
	if r := s.Post(t, `{"id": 4, "name": "resumed"}`); r.Status != 200 {
		t.Fatalf("after Redis resumed: %d %s", r.Status, r.Body)
	}
}

// TestTokenRotation: the tokens file, replaced the way Kubernetes updates a
// mounted Secret (an atomic rename), takes effect without a restart.
func TestTokenRotation(t *testing.T) {
	s := startService(t, options{})
	if r := s.Post(t, `{"id": 1, "name": "x"}`); r.Status != 200 {
		t.Fatalf("old token: %d", r.Status)
	}
	old := s.Token
	tmp := s.TokenFile + ".new"
	if err := os.WriteFile(tmp, []byte("rotated-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.TokenFile); err != nil {
		t.Fatal(err)
	}
	s.Token = "rotated-token"
	deadline := time.Now().Add(5 * time.Second)
	for s.Post(t, `{"id": 2, "name": "y"}`).Status != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("new token not accepted within 5s:\n%s", s.Logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Token = old
	if r := s.Post(t, `{"id": 3, "name": "z"}`); r.Status != 401 || r.ErrorCode(t) != 40102 {
		t.Fatalf("removed token: %d %s", r.Status, r.Body)
	}

	// A broken file keeps the tokens in force.
	if err := os.WriteFile(s.TokenFile, []byte("sha256:not-hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // four reload intervals
	s.Token = "rotated-token"
	if r := s.Post(t, `{"id": 2, "name": "y"}`); r.Status != 200 {
		t.Fatalf("a broken tokens file revoked the tokens in force: %d", r.Status)
	}
	if !strings.Contains(s.Logs.String(), "no longer parses") {
		t.Fatalf("the broken tokens file was not logged")
	}
}

// TestGracefulShutdown: SIGTERM drains and exits 0.
func TestGracefulShutdown(t *testing.T) {
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr})
	if code := s.Signal(t, syscall.SIGTERM, defaultExitWait); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0:\n%s", code, s.Logs)
	}
	if !strings.Contains(s.Logs.String(), "servers stopped") {
		t.Fatalf("no orderly stop in the logs:\n%s", s.Logs)
	}
}
