package redisscripts

import (
	"testing"
	"time"
)

// TestFindMasterOnRealSentinels runs the chart's files/redis/find-master.sh against real
// redis-servers and Sentinels on loopback, each "pod" on its own 127.73.N.x
// address with the chart's two ports mapped to free ones. It is the first
// pod's script as it restarts, its own Sentinel gone with it.
func TestFindMasterOnRealSentinels(t *testing.T) {
	// The master's pod is back before the Sentinels have missed it for half
	// their down-after: it is the master again, and starting it as one
	// brings no failover.
	t.Run("back at once", func(t *testing.T) {
		t.Parallel()
		set := startSentinelSet(t, 1)
		set.stop(0)
		got, took := set.runScript(t, "find-master.sh", 0)
		if got != set.ip(0) {
			t.Fatalf("find-master.sh named %q after %v, want the pod itself (%s)", got, took, set.ip(0))
		}
		set.restart(0)
		time.Sleep(downAfter + 2*time.Second)
		for i := 1; i < 3; i++ {
			if m := set.sentinelMaster(t, i); m != set.ip(0) {
				t.Errorf("Sentinel %d names %s after the restart, want %s: a failover began", i, m, set.ip(0))
			}
		}
	})

	// Gone long enough for the Sentinels to fail over (the move from
	// standalone, where the first pod is recreated in about five seconds):
	// the script waits for the new master instead of starting a second one
	// whose acknowledged writes the promotion drops.
	t.Run("back during the failover", func(t *testing.T) {
		t.Parallel()
		set := startSentinelSet(t, 2)
		set.stop(0)
		time.Sleep(downAfter * 6 / 10)
		got, took := set.runScript(t, "find-master.sh", 0)
		if got == set.ip(0) || (got != set.ip(1) && got != set.ip(2)) {
			t.Fatalf("find-master.sh named %q after %v, want the replica the Sentinels promote (%s or %s)", got, took, set.ip(1), set.ip(2))
		}
		// The other Sentinel learns the new master from the leader's hellos.
		deadline := time.Now().Add(10 * time.Second)
		for i := 1; i < 3; i++ {
			for set.sentinelMaster(t, i) != got {
				if time.Now().After(deadline) {
					t.Fatalf("Sentinel %d names %s, not %s, 10s after the script", i, set.sentinelMaster(t, i), got)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		if role := set.role(t, got); role != "master" {
			t.Errorf("%s, named master, reports role %q", got, role)
		}
	})

	// No Sentinel answers (the first pod still runs the standalone template,
	// the others start): the server that says it is master is named.
	t.Run("standalone holds the plants", func(t *testing.T) {
		t.Parallel()
		set := onFreePorts(t, 3, func(s *sentinelSet) error { return s.start(t, 0, "") })
		got, took := set.runScript(t, "find-master.sh", 1)
		if got != set.ip(0) {
			t.Fatalf("find-master.sh for the second pod named %q after %v, want the standalone server %s", got, took, set.ip(0))
		}
	})
}
