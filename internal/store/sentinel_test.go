package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/longtest"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store"
)

// TestSentinelNodeLoss loses the master's node, Sentinel included, as a
// node that stops answering (SIGSTOP: connections stay open, nothing
// comes back), while the client asks that very Sentinel which server is the
// master, with the service's timeouts (every call a 1 s deadline, as
// --store-timeout gives a request). The two other Sentinels promote a
// replica; writes must reach it soon after.
//
// go-redis leaves its Sentinel only when asking it fails before the
// deadline of the dial it asks for; with the Sentinel held to the same
// timeouts as that dial, the deadline came first, every time, and the
// client kept asking the silent Sentinel: on the three-node cluster, 20 s
// of 503s after the kill instead of the 8 s the failover takes.
func TestSentinelNodeLoss(t *testing.T) {
	longtest.Mark(t, "several processes or Redis servers")
	const resumeBound = 3 * time.Second
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Replicas: 2})
	client, err := store.NewRedisClient(store.RedisOptions{
		Addrs: g.SentinelAddrs(), MasterName: g.MasterName,
		MaxRetries: 2, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	write := func(i int) error {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		return client.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err()
	}
	if err := write(0); err != nil {
		t.Fatalf("first write: %v", err)
	}

	asked, err := askedSentinel(t.Context(), g)
	if err != nil {
		t.Fatal(err)
	}
	master := g.Servers[0]
	asked.Pause()
	master.Pause()
	lost := time.Now()
	t.Cleanup(func() { asked.Resume(); master.Resume() })

	var live []string
	for _, s := range g.Sentinels {
		if s != asked {
			live = append(live, s.Addr)
		}
	}
	var promotedAfter, resumedAfter time.Duration
	var lastErr error
	servicetest.Eventually(20*time.Second, 100*time.Millisecond, func() bool {
		if promotedAfter == 0 && promotedBy(t.Context(), g.MasterName, live, master.Addr) {
			promotedAfter = time.Since(lost)
		}
		if lastErr = write(1); lastErr == nil && promotedAfter > 0 {
			resumedAfter = time.Since(lost)
			return true
		}
		return false
	})
	switch {
	case promotedAfter == 0:
		t.Fatalf("no replica promoted within 20 s of the loss")
	case resumedAfter == 0:
		t.Fatalf("a replica was promoted %v after the loss, and writes still failed 20 s after it: %v", promotedAfter, lastErr)
	case resumedAfter-promotedAfter > resumeBound:
		t.Errorf("writes resumed %v after the promotion (bound %v)", resumedAfter-promotedAfter, resumeBound)
	}
	t.Logf("promoted %v after the loss, writes resumed %v later", promotedAfter.Round(time.Millisecond), (resumedAfter - promotedAfter).Round(time.Millisecond))
}

// askedSentinel is the Sentinel the client asks: the one holding a
// connection named after it.
func askedSentinel(ctx context.Context, g *redistest.SentinelGroup) (*redistest.Server, error) {
	for _, s := range g.Sentinels {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		list, err := c.ClientList(ctx).Result()
		_ = c.Close()
		if err != nil {
			return nil, fmt.Errorf("CLIENT LIST on sentinel %s: %w", s.Addr, err)
		}
		if strings.Contains(list, " name=plantstore ") {
			return s, nil
		}
	}
	return nil, errors.New("no sentinel holds a connection of the client")
}

// promotedBy reports whether one of the sentinels names a master other than
// old.
func promotedBy(ctx context.Context, name string, sentinels []string, old string) bool {
	for _, addr := range sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
		ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		m, err := c.GetMasterAddrByName(ctx, name).Result()
		cancel()
		_ = c.Close()
		if err == nil && net.JoinHostPort(m[0], m[1]) != old {
			return true
		}
	}
	return false
}
