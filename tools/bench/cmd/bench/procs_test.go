package main

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/plantstore/plantstore/tools/bench/internal/report"
)

// TestStartRedisWinsThePortRace forces the race of the harness's Redis
// start: the port chosen is taken just before redis-server's exec, first by
// a listener that accepts and never answers, then by another redis-server
// (started by the harness on it, which answers PING). The start still
// succeeds, on a third port, and its client talks to its own server.
func TestStartRedisWinsThePortRace(t *testing.T) {
	if _, err := redisBinary(); err != nil {
		t.Fatal(err) // never skip: make test installs redis-server
	}
	h := &harness{work: t.TempDir(), run: &report.Run{Appendfsync: "everysec"}}
	t.Cleanup(func() {
		for _, p := range h.procs {
			p.stop(time.Second)
		}
	})
	var taken []string
	calls := 0
	beforeRedisExec = func(port int) {
		calls++
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		switch calls {
		case 1:
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("taking %s: %v", addr, err)
				return
			}
			t.Cleanup(func() { l.Close() })
			taken = append(taken, addr)
		case 2:
			taken = append(taken, addr)
			other := &harness{work: t.TempDir(), run: h.run}
			t.Cleanup(func() {
				for _, p := range other.procs {
					p.stop(time.Second)
				}
			})
			bin, _ := redisBinary()
			if _, c, err := other.launchRedis(context.Background(), bin, port); err != nil {
				t.Errorf("starting the other server on %s: %v", addr, err)
			} else {
				c.Close()
			}
		}
	}
	t.Cleanup(func() { beforeRedisExec = nil })
	addr, client, err := h.startRedis(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if len(taken) != 2 {
		t.Fatalf("the race was not forced: %v", taken)
	}
	for _, a := range taken {
		if addr == a {
			t.Fatalf("started on %s, a port taken", addr)
		}
	}
	if calls != 4 {
		t.Errorf("%d execs, want 4 (lost to a listener, the other server's, lost to it, won)", calls)
	}
	info, err := client.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	if pid := infoField(info, "process_id"); pid != strconv.Itoa(h.procs[len(h.procs)-1].pid()) {
		t.Errorf("the client talks to process %s, not the harness's last redis-server", pid)
	}
}
