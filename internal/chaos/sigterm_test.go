package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store"
)

// dialStatus dials addr once: 200 when a connection was accepted, 0 and
// the error otherwise. It probes whether a listener is still open.
func dialStatus(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	c.Close()
	return 200, nil
}

func refused(p probeSample) bool { return errors.Is(p.err, syscall.ECONNREFUSED) }

// slowRequest is a create whose body is sent in two parts, so that it can
// be kept in flight across an event.
type slowRequest struct {
	conn net.Conn
	rest string
}

// startSlowRequest sends a create's headers and the first bytes of its body.
func startSlowRequest(t *testing.T, s *servicetest.Service, id int) *slowRequest {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.API, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	body := fmt.Sprintf(`{"id": %d, "name": "in flight"}`, id)
	head := fmt.Sprintf("POST /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", s.Token, len(body))
	if _, err := io.WriteString(conn, head+body[:5]); err != nil {
		t.Fatal(err)
	}
	return &slowRequest{conn: conn, rest: body[5:]}
}

// finish sends the rest of the body and reads the response.
func (r *slowRequest) finish() (int, error) {
	if _, err := io.WriteString(r.conn, r.rest); err != nil {
		return 0, err
	}
	_ = r.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(r.conn), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestChaosSIGTERM sends SIGTERM under load. The client retries a refused
// connection (as it would on another replica) and marks creates idempotent
// (Idempotency-Key), so that Go's transport resends one on a kept-alive
// connection the server closed before reading it. Then: /readyz fails
// first, the API keeps serving for --shutdown-delay, only then refuses new
// connections, requests in flight finish, no request fails, and the process
// exits 0 within --shutdown-timeout. A second signal exits at once.
func TestChaosSIGTERM(t *testing.T) {
	redis := redistest.Start(t)
	delay := servicetest.Pick(time.Second, 5*time.Second)
	const grace = 10 * time.Second
	var drain struct {
		requests, failures                 int
		toUnready, toListenerClose, toExit time.Duration
	}
	var second time.Duration

	t.Run("drain", func(t *testing.T) {
		s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr,
			Extra: append([]string{"--shutdown-delay", delay.String(), "--shutdown-timeout", grace.String()}, patientStore...)})
		load := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: 8, RetryRefused: true, IdempotencyKey: true})
		ready := startProbe(10*time.Millisecond, s.Ready)
		listener := startProbe(10*time.Millisecond, func() (int, error) { return dialStatus(strings.TrimPrefix(s.API, "http://")) })
		time.Sleep(servicetest.Pick(time.Second, 5*time.Second))
		inFlight := startSlowRequest(t, s, -1)

		// Before sending: the service's delay starts when the signal
		// arrives, which can be before SendSignal returns.
		signalled := time.Now()
		s.SendSignal(t, syscall.SIGTERM)
		// The request in flight spans the listener's close: finish it once
		// new connections are refused.
		if !servicetest.Eventually(delay+grace, 20*time.Millisecond, func() bool {
			_, err := dialStatus(strings.TrimPrefix(s.API, "http://"))
			return errors.Is(err, syscall.ECONNREFUSED)
		}) {
			t.Fatalf("the API listener was not closed within %v of SIGTERM", delay+grace)
		}
		if status, err := inFlight.finish(); err != nil || status != http.StatusOK {
			t.Errorf("the request in flight at the listener's close: %d %v, want 200", status, err)
		}
		code := s.Wait(t, delay+grace+schedulingMargin)
		exited := time.Now()
		res := load.Stop()
		readySamples, listenerSamples := ready.Stop(), listener.Stop()

		if code != 0 {
			t.Errorf("exit code %d after SIGTERM, want 0:\n%s", code, s.Logs)
		}
		unready, ok := first(readySamples, signalled, func(p probeSample) bool { return p.status != http.StatusOK })
		if !ok {
			t.Errorf("/readyz never failed after SIGTERM")
		}
		closed, ok := first(listenerSamples, signalled, refused)
		if !ok {
			t.Errorf("the API listener was never seen closed")
		}
		// The refusal happened during that dial, at the latest when it
		// returned: hold the delay to that end, the probe's goroutine may
		// have waited for a core between taking the time and dialling.
		for _, p := range listenerSamples {
			if p.at.Equal(closed) {
				closed = p.end
			}
		}
		drain.toUnready, drain.toListenerClose, drain.toExit = unready.Sub(signalled), closed.Sub(signalled), exited.Sub(signalled)

		// Order: readiness drops, then (the delay later) the listener closes.
		if !unready.Before(closed) {
			t.Errorf("/readyz failed %v after SIGTERM, not before the listener closed (%v)", drain.toUnready, drain.toListenerClose)
		}
		if drain.toUnready > schedulingMargin {
			t.Errorf("/readyz failed only %v after SIGTERM, want at once", drain.toUnready)
		}
		if drain.toListenerClose < delay {
			t.Errorf("the listener closed %v after SIGTERM, before the %v shutdown delay", drain.toListenerClose, delay)
		}
		if drain.toExit > delay+grace+schedulingMargin {
			t.Errorf("exit %v after SIGTERM, beyond the delay %v + grace %v", drain.toExit, delay, grace)
		}

		// No request failed; a refused connection only ever came after the delay.
		drain.requests = len(res.Records)
		for _, rec := range res.Records {
			if !rec.FirstRefusal.IsZero() && rec.FirstRefusal.Sub(signalled) < delay {
				t.Errorf("request %d: connection refused %v after SIGTERM, within the %v shutdown delay", rec.ID, rec.FirstRefusal.Sub(signalled), delay)
			}
			switch {
			case rec.Refused: // never sent: the load stopped while it waited for another listener
				drain.requests--
			case rec.Err != nil || rec.Status != http.StatusOK:
				drain.failures++
				if drain.failures <= 5 {
					t.Errorf("request %d %v after SIGTERM (connection reused %v): %d %v %s", rec.ID, rec.Start.Sub(signalled), rec.Reused, rec.Status, rec.Err, rec.Reply)
				}
			}
		}
		t.Logf("load: %v", res)
	})

	t.Run("second signal", func(t *testing.T) {
		// A long delay: only the second signal can end the process soon.
		s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr,
			Extra: []string{"--shutdown-delay", "1m", "--shutdown-timeout", grace.String()}})
		load := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: 8, FirstID: 1 << 40})
		defer load.Stop()
		time.Sleep(500 * time.Millisecond)
		s.SendSignal(t, syscall.SIGTERM)
		if !servicetest.Eventually(5*time.Second, 20*time.Millisecond, func() bool { st, _ := s.Ready(); return st == http.StatusServiceUnavailable }) {
			t.Fatalf("/readyz did not fail within 5 s of SIGTERM")
		}
		sent := time.Now()
		code := s.Signal(t, syscall.SIGTERM, 5*time.Second)
		second = time.Since(sent)
		if code == 0 {
			t.Errorf("exit code 0 after a second signal, want non-zero (the drain was cut short)")
		}
		// "At once": well within the 1 m delay; the margin covers scheduling.
		if second > schedulingMargin {
			t.Errorf("exit %v after the second signal, want at once", second)
		}
		if !strings.Contains(s.Logs.String(), "second signal") {
			t.Errorf("the second signal was not logged:\n%s", s.Logs)
		}
	})

	servicetest.Report(t, "sigterm", "requests=%d failures=%d delay=%s to_readyz_503=%s to_listener_close=%s to_exit=%s second_signal_exit=%s",
		drain.requests, drain.failures, ms(delay), ms(drain.toUnready), ms(drain.toListenerClose), ms(drain.toExit), ms(second))
}

// TestChaosSIGTERMDefaults sends SIGTERM to a service on its default
// shutdown flags (no --shutdown-delay) under a keep-alive load of plain
// creates: no Idempotency-Key, so Go's transport cannot resend a POST that
// went out on a connection the server closed. Only a refused connection is
// retried (nothing was sent: a client retries another replica). Asserted
// over several rounds, every other one with the service stalled (SIGSTOP)
// across the signal: no request fails with a transport error or a non-200,
// every acknowledged plant is in Redis, and the process exits 0.
func TestChaosSIGTERMDefaults(t *testing.T) {
	redis := redistest.Start(t)
	client := redis.Client()
	rounds := servicetest.Pick(6, 20)
	var requests, failures, acked, lost int
	var toExit time.Duration
	for round := range rounds {
		s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, Extra: patientStore})
		load := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: 32, RetryRefused: true, FirstID: int64(round) << 32})
		time.Sleep(servicetest.Pick(time.Second, 3*time.Second))
		stalled := round%2 == 1
		if stalled {
			// The service stalls (as under CPU throttling or a long pause)
			// for longer than its idle grace while requests keep arriving,
			// and SIGTERM finds them unread on connections it counts as
			// idle.
			s.SendSignal(t, syscall.SIGSTOP)
			time.Sleep(1500 * time.Millisecond)
		}
		signalled := time.Now()
		s.SendSignal(t, syscall.SIGTERM)
		if stalled {
			s.SendSignal(t, syscall.SIGCONT)
		}
		if code := s.Wait(t, 30*time.Second); code != 0 {
			t.Errorf("round %d: exit code %d after SIGTERM, want 0:\n%s", round, code, s.Logs)
		}
		toExit = max(toExit, time.Since(signalled))
		res := load.Stop()

		for _, rec := range res.Records {
			switch {
			case rec.Refused: // never sent: this replica is gone, another would take it
			case rec.Err != nil || rec.Status != http.StatusOK:
				failures++
				if failures <= 5 {
					t.Errorf("round %d: request %d %v after SIGTERM (connection reused %v): %d %v %s",
						round, rec.ID, rec.Start.Sub(signalled), rec.Reused, rec.Status, rec.Err, rec.Reply)
				}
				requests++
			default:
				requests++
			}
		}
		for id, body := range res.Acknowledged() {
			acked++
			got, err := client.Get(t.Context(), store.PlantKey("plantstore:", id)).Result()
			if want := storedForm(t, body); err != nil || got != want {
				lost++
				if lost <= 5 {
					t.Errorf("acknowledged plant %d: Redis has %q (%v), answered %s", id, got, err, body)
				}
			}
		}
	}
	servicetest.Report(t, "sigterm-defaults", "rounds=%d requests=%d failures=%d acked_lost=%d/%d max_to_exit=%s",
		rounds, requests, failures, lost, acked, ms(toExit))
}
