package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/longtest"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
)

// The limited client of TestRateLimitAcrossReplicas: 100 requests a second,
// a burst of 20, shared by both processes.
const (
	replicasRate  = 100
	replicasBurst = 20
	// replicasTolerance is what the two processes may admit above the
	// GCRA's burst + rate × elapsed: the window's edges (a request sent
	// just before the clock starts, or answered after it stops).
	replicasTolerance = 0.02
	// replicasFloor is the least they must admit of it: a limiter that
	// refuses (nearly) everything fails too.
	replicasFloor = 0.85
)

// TestRateLimitAcrossReplicas proves section 10's "rate limits hold across
// every replica" with two real plantstore processes on one real Redis: for
// 10 s the client limited (rate=100/s burst=20) asks about four times its
// limit, split evenly over both processes, while the client other (no rate)
// asks at a modest steady rate on both. Together the processes admit the
// limited client no more than burst + rate × elapsed (+2% for the window's
// edges) and at least 85% of it; every refusal is 429 42901 with
// Retry-After and the RateLimit fields; other is never refused.
//
// The control case runs the same load with each process keeping its budgets
// on a Redis of its own (--rate-limit-redis-addr), so each limits alone:
// there the processes admit about twice the limit, and the same check must
// reject it, which shows the shared case's check can fail.
func TestRateLimitAcrossReplicas(t *testing.T) {
	longtest.Mark(t, "several processes or Redis servers")
	for _, tc := range []struct {
		name     string
		window   time.Duration
		shared   bool // both processes keep their budgets on the store's Redis
		wantPass bool // the shared-budget check holds
	}{
		{name: "shared budget", window: 10 * time.Second, shared: true, wantPass: true},
		// Short: the doubling shows in 2 s as in 10.
		{name: "control: a budget per process", window: 2 * time.Second, shared: false, wantPass: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := redistest.Start(t)
			tokens := filepath.Join(t.TempDir(), "tokens")
			if err := os.WriteFile(tokens, []byte(fmt.Sprintf(
				"limited-token name=limited rate=%d/s burst=%d\nother-token name=other\n", replicasRate, replicasBurst)), 0o600); err != nil {
				t.Fatal(err)
			}
			var procs [2]*service
			for i := range procs {
				extra := []string{"--auth-tokens-file", tokens,
					// A decision slower than this is served unlimited (fail
					// open); on a busy machine 100 ms can pass, and this test
					// measures the shared budget, not fail open.
					"--rate-limit-timeout", "2s"}
				if !tc.shared {
					extra = append(extra, "--rate-limit-redis-addr", redistest.Start(t).Addr)
				}
				procs[i] = startService(t, options{RedisAddr: store.Addr, NoTokens: true, Extra: extra})
			}

			got := driveReplicas(t, procs, tc.window)
			allowed := replicasBurst + replicasRate*got.elapsed.Seconds()
			admitted := got.limited[0].admitted + got.limited[1].admitted
			ratio := float64(admitted) / allowed
			var failOpen float64
			for _, p := range procs {
				families, _ := p.Metrics(t)
				failOpen += servicetest.Value(families, "plantstore_ratelimit_fail_open_total")
			}
			t.Logf("RATELIMIT replicas shared=%t window=%v limit=%d/s burst=%d admitted=%d of allowed=%.0f ratio=%.4f split=%d/%d limited_429=%d other=%d other_429=%d fail_open=%.0f elapsed=%v",
				tc.shared, tc.window, replicasRate, replicasBurst, admitted, allowed, ratio,
				got.limited[0].admitted, got.limited[1].admitted, got.limited[0].refused+got.limited[1].refused,
				got.other.admitted, got.other.refused, failOpen, got.elapsed.Round(time.Millisecond))

			// What every case must hold, whatever the budgets: the answers
			// are the contract's and the demand was above the limit.
			for _, e := range got.errors {
				t.Error(e)
			}
			if got.other.refused != 0 || got.other.admitted == 0 {
				t.Errorf("client other (no rate): %d admitted, %d refused; want all admitted", got.other.admitted, got.other.refused)
			}
			if failOpen != 0 {
				t.Errorf("%.0f requests served without a rate-limit decision (fail open): the figure is not the limiter's", failOpen)
			}
			if sent := got.limited[0].sent() + got.limited[1].sent(); float64(sent) < 2*allowed {
				t.Errorf("client limited asked %d times, less than twice the %.0f its limit allows: the load did not exceed it", sent, allowed)
			}

			err := checkShared(admitted, allowed, got.limited[0].admitted, got.limited[1].admitted)
			switch {
			case tc.wantPass && err != nil:
				t.Error(err)
			case !tc.wantPass && err == nil:
				t.Errorf("a budget per process admitted %d of %.0f allowed (ratio %.4f), and the shared-budget check accepted it: the check cannot fail", admitted, allowed, ratio)
			case !tc.wantPass && ratio < 1.5:
				t.Errorf("a budget per process admitted only %.4f of the limit; want about 2 (each process limits alone)", ratio)
			}
		})
	}
}

// checkShared is the shared-budget bound: the two processes admitted
// together (a and b each) at most burst + rate × elapsed plus the tolerance,
// at least the floor of it, and each process its part.
func checkShared(admitted int64, allowed float64, a, b int64) error {
	ratio := float64(admitted) / allowed
	switch {
	case ratio > 1+replicasTolerance:
		return fmt.Errorf("client limited: the two processes admitted %d, %.2f%% of the %.0f its limit allows; want at most %.0f%%",
			admitted, 100*ratio, allowed, 100*(1+replicasTolerance))
	case ratio < replicasFloor:
		return fmt.Errorf("client limited: the two processes admitted %d, %.2f%% of the %.0f its limit allows; want at least %.0f%%",
			admitted, 100*ratio, allowed, 100*replicasFloor)
	case a < admitted/4 || b < admitted/4:
		return fmt.Errorf("client limited: admitted %d/%d by the two processes; want each at least a quarter (the demand is split evenly)", a, b)
	}
	return nil
}

// tally counts one client's answers on one process.
type tally struct {
	admitted, refused int64
}

func (c tally) sent() int64 { return c.admitted + c.refused }

// replicasResult is what driveReplicas saw.
type replicasResult struct {
	limited [2]tally // per process
	other   tally    // both processes
	elapsed time.Duration
	errors  []string // answers that break the contract, at most a few
}

// driveReplicas sends, for window, creates of fresh plants: as limited
// about 2 × rate a second to each process (eight paced workers on each),
// as other 40 a second to each (two paced workers). Each process has its own
// keep-alive client. elapsed runs from before the first request to after
// the last answer.
func driveReplicas(t *testing.T, procs [2]*service, window time.Duration) replicasResult {
	t.Helper()
	const (
		limitedWorkers = 8
		limitedEvery   = 40 * time.Millisecond // 8 × 25/s = 200/s a process, 4 × the limit over both
		otherWorkers   = 2
		otherEvery     = 50 * time.Millisecond // 2 × 20/s = 40/s a process
	)
	var (
		res      replicasResult
		mu       sync.Mutex
		nextID   atomic.Int64
		counters [2]struct{ limited, other tally }
		wg       sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(res.errors) < 10 {
			res.errors = append(res.errors, fmt.Sprintf(format, args...))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	start := time.Now()
	for p, proc := range procs {
		client := &http.Client{
			Transport: &http.Transport{MaxIdleConnsPerHost: limitedWorkers + otherWorkers, IdleConnTimeout: time.Minute},
			Timeout:   5 * time.Second,
		}
		defer client.CloseIdleConnections()
		worker := func(token string, every time.Duration, phase, workers int, count func(admitted bool)) {
			// Workers start spread over one interval, then each keeps its
			// own schedule; a slot missed on a busy machine is skipped, not
			// made up in a burst.
			next := start.Add(every * time.Duration(phase) / time.Duration(workers))
			for {
				if d := time.Until(next); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
				if ctx.Err() != nil {
					return
				}
				next = next.Add(every)
				if now := time.Now(); next.Before(now) {
					next = now
				}
				id := nextID.Add(1)
				r, err := createPlant(client, proc, token, id)
				if err != nil {
					fail("process %d, %s, plant %d: %v", p, strings.TrimSuffix(token, "-token"), id, err)
					return
				}
				switch r.Status {
				case http.StatusOK:
					count(true)
				case http.StatusTooManyRequests:
					count(false)
				default:
					fail("process %d, %s, plant %d: status %d %s", p, strings.TrimSuffix(token, "-token"), id, r.Status, r.Body)
					return
				}
				if msg := checkRateLimitFields(token == "limited-token", r); msg != "" {
					fail("process %d, %s, plant %d: %s", p, strings.TrimSuffix(token, "-token"), id, msg)
				}
			}
		}
		for w := range limitedWorkers {
			wg.Go(func() {
				worker("limited-token", limitedEvery, w, limitedWorkers, func(admitted bool) {
					mu.Lock()
					defer mu.Unlock()
					if admitted {
						counters[p].limited.admitted++
					} else {
						counters[p].limited.refused++
					}
				})
			})
		}
		for w := range otherWorkers {
			wg.Go(func() {
				worker("other-token", otherEvery, w, otherWorkers, func(admitted bool) {
					mu.Lock()
					defer mu.Unlock()
					if admitted {
						counters[p].other.admitted++
					} else {
						counters[p].other.refused++
					}
				})
			})
		}
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	for p, c := range counters {
		res.limited[p] = c.limited
		res.other.admitted += c.other.admitted
		res.other.refused += c.other.refused
	}
	return res
}

// createPlant creates plant id on proc as token's client.
func createPlant(client *http.Client, proc *service, token string, id int64) (reply, error) {
	req, err := http.NewRequest(http.MethodPost, proc.API+"/plants",
		strings.NewReader(fmt.Sprintf(`{"id": %d, "name": "plant %d"}`, id, id)))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// checkRateLimitFields says what is wrong with r's rate-limit fields
// ("" when nothing): a limited client's answers carry RateLimit-Policy, a
// refusal is 42901 with Retry-After and RateLimit r=0;t=<Retry-After>; an
// unlimited client's answers carry none of them.
func checkRateLimitFields(limited bool, r reply) string {
	policy, limit, retry := r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"), r.Header.Get("Retry-After")
	if !limited {
		if policy != "" || limit != "" || retry != "" {
			return fmt.Sprintf("an unlimited client got RateLimit-Policy %q RateLimit %q Retry-After %q", policy, limit, retry)
		}
		return ""
	}
	if want := fmt.Sprintf(`"client";q=%d;w=1`, replicasRate); policy != want {
		return fmt.Sprintf("status %d: RateLimit-Policy %q, want %q", r.Status, policy, want)
	}
	if r.Status == http.StatusOK {
		if !strings.HasPrefix(limit, `"client";r=`) || retry != "" {
			return fmt.Sprintf("admitted: RateLimit %q Retry-After %q", limit, retry)
		}
		return ""
	}
	code, err := r.Code()
	if err != nil {
		return err.Error()
	}
	if code != 42901 {
		return fmt.Sprintf("429 with code %d, want 42901", code)
	}
	if n, err := strconv.Atoi(retry); err != nil || n < 1 {
		return fmt.Sprintf("429 with Retry-After %q, want whole seconds >= 1", retry)
	}
	if want := `"client";r=0;t=` + retry; limit != want {
		return fmt.Sprintf("429: RateLimit %q, want %q", limit, want)
	}
	return ""
}
