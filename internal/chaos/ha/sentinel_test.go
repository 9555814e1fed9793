package ha

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
)

// TestChaosSentinelFailover runs the service on Sentinel (a master, two
// replicas, three sentinels with quorum 2 and down-after-milliseconds 1000,
// all on loopback) under load and kills the master with SIGKILL. Writes must
// resume within 10 s of the kill.
//
// Asynchronous replication loses acknowledged writes when the master dies
// before its replicas have them. To make that window observable rather than
// left to chance, the scenario opens it on purpose: it stops both replicas
// (SIGSTOP) and cuts their links on the master (CLIENT KILL TYPE replica), so
// that nothing written from then on can reach them; keeps the load running
// for the window; kills the master; and resumes the replicas (SIGCONT). The
// sentinels then promote one replica, which lacks every write of the window.
//
// Without --redis-min-replica-acks every create answered 200 in the window is
// lost, and the test requires that loss to be seen (and counts it). With
// --redis-min-replica-acks 1 those creates answer 503 instead, and no
// acknowledged create at all may be missing from the new master. By
// default (--redis-batch) the creates without acks share pipelines, and
// must lose the window's plants as one round trip each does (sentinel-
// unbatched); the creates with acks keep their own pipelines with WAIT.
func TestChaosSentinelFailover(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		extra    []string
	}{
		{"sentinel", nil},
		{"sentinel-acks", []string{"--redis-min-replica-acks", "1", "--redis-replica-ack-timeout", "200ms"}},
		{"sentinel-unbatched", []string{"--redis-batch=false"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) { sentinelFailover(t, tc.scenario, tc.extra) })
	}
}

func sentinelFailover(t *testing.T, scenario string, extra []string) {
	const resumeBound = 10 * time.Second
	before, window, after := servicetest.Pick(time.Second, 5*time.Second),
		servicetest.Pick(500*time.Millisecond, 1500*time.Millisecond), servicetest.Pick(2*time.Second, 10*time.Second)
	acks := slices.Contains(extra, "--redis-min-replica-acks")

	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Replicas: 2})
	f := newFailover(g)
	s := servicetest.Start(t, binary, servicetest.Options{
		RedisAddr: strings.Join(g.SentinelAddrs(), ","),
		Extra:     append([]string{"--redis-master-name", g.MasterName}, extra...),
	})

	load := servicetest.StartLoad(s, servicetest.LoadOptions{Workers: 8})
	time.Sleep(before)

	// Open the window, kill the master, wait for the sentinels to name a
	// new one, then keep the load on.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	cut := f.openWindow(ctx, t)
	time.Sleep(window)
	killed := f.killMaster()
	promoted := f.promoted(ctx)
	if promoted == nil {
		res := load.Stop()
		t.Fatalf("no failover within 20 s of the kill; load: %v\n%s", res, s.Logs)
	}
	promotedAfter := time.Since(killed)
	time.Sleep(after)
	res := load.Stop()

	n503 := checkAnswers(t, res)
	resumedAt, ok := firstOK(res, killed)
	resume := resumedAt.Sub(killed)
	if !ok || resume > resumeBound {
		t.Errorf("writes did not resume within %v of the master's death (resumed %v, after %v)", resumeBound, ok, resume)
	}

	// In the window the replicas could receive nothing.
	windowAcked := 0
	for _, rec := range res.Records {
		if rec.Status == http.StatusOK && rec.Start.After(cut) && rec.Start.Add(rec.Latency).Before(killed) {
			windowAcked++
		}
	}
	acked := res.Acknowledged()
	lost := lostPlants(t, promoted.Client(), acked)
	if acks {
		if windowAcked != 0 {
			t.Errorf("%d creates answered 200 while no replica could acknowledge them", windowAcked)
		}
		if len(lost) != 0 {
			t.Errorf("%d of %d acknowledged plants missing from the new master with --redis-min-replica-acks 1: %v", len(lost), len(acked), first(lost, 10))
		}
	} else {
		if windowAcked == 0 {
			t.Errorf("no create answered 200 in the %v window: the scenario exposed no asynchronous loss; load: %v", window, res)
		}
		if len(lost) < windowAcked {
			t.Errorf("%d acknowledged plants lost, fewer than the %d answered 200 after the replicas' links were cut", len(lost), windowAcked)
		}
	}
	servicetest.Report(t, scenario, "requests=%d ok=%d 503=%d acked_lost=%d/%d acked_in_window=%d window=%s promoted_after=%s writes_resumed_after=%s (bound %s)%s",
		len(res.Records), res.Count(http.StatusOK), n503, len(lost), len(acked), windowAcked, ms(window), ms(promotedAfter), ms(resume), ms(resumeBound), s.Batching(t, extra))
	t.Logf("load: %v", res)
}

func first(ids []int64, n int) []int64 { return ids[:min(n, len(ids))] }
