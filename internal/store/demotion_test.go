package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/longtest"
	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store"
)

// TestRedisMasterDemotedDuringWait: a master that becomes a replica while a
// create waits for acknowledgements (a Sentinel reconfiguring it, say) must
// leave that create unavailable (503, a retry is safe), never an internal
// error (500): whatever the master answers then, no replica vouches for the
// plant. Redis 7.0 unblocks the WAIT and the client's retries meet READONLY.
func TestRedisMasterDemotedDuringWait(t *testing.T) {
	longtest.Mark(t, "several processes or Redis servers")
	master := redistest.Start(t)
	client := newClient(t, store.RedisOptions{Addrs: []string{master.Addr}})
	// No replica exists, so WAIT blocks for the whole (long) ack timeout.
	r := store.NewRedis(client, "plantstore:").WaitForReplicas(1, time.Minute)

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _, err := r.Create(ctx, plant.Plant{ID: 7, Name: "Monstera"})
		done <- err
	}()

	admin := master.Client()
	ctx := context.Background()
	if !servicetest.Eventually(10*time.Second, 10*time.Millisecond, func() bool {
		info, err := admin.Info(ctx, "clients").Result()
		return err == nil && strings.Contains(info, "blocked_clients:1")
	}) {
		t.Fatal("the create never blocked in WAIT")
	}
	// Demote the master to a replica of a port nobody listens on.
	port := redistest.RefusedPort(t)
	if err := admin.Do(ctx, "replicaof", "127.0.0.1", strconv.Itoa(port)).Err(); err != nil {
		t.Fatalf("REPLICAOF: %v", err)
	}
	t.Cleanup(func() { _ = admin.Do(context.Background(), "replicaof", "no", "one").Err() })

	select {
	case err := <-done:
		if !errors.Is(err, plant.ErrUnavailable) {
			t.Fatalf("create whose WAIT was unblocked by a demotion = %v; want ErrUnavailable (503)", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the create did not return after its master was demoted")
	}
}
