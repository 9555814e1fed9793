package redisscripts

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSwitchoverOnRealSentinels runs the chart's files/redis/switchover.sh, the master
// pod's preStop, against real redis-servers and Sentinels on loopback: the
// master's pod drained, its own Sentinel stopping with it. The Sentinels
// promote a replica, and the script ends once every Sentinel has it on
// record, so the pod stops seconds after the drain began, not when the
// pause runs out (20 s); the old master's writes stay paused to its end, so
// none is taken by a master about to stop, and every write acknowledged
// before the drain is on the new master. Its clients' connections are
// closed at the end, so that they ask the Sentinels again at once rather
// than wait on the paused writes until the pod stops.
func TestSwitchoverOnRealSentinels(t *testing.T) {
	set := startSentinelSet(t, 4)
	if _, err := set.cli(set.ip(0), set.redisPort, "SET", "acknowledged", "before-the-drain"); err != nil {
		t.Fatal(err)
	}
	// An API pod's pooled connection to the master.
	client, err := net.DialTimeout("tcp", net.JoinHostPort(set.ip(0), strconv.Itoa(set.redisPort)), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	replies := bufio.NewReader(client)
	if _, err := client.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := replies.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING on a client connection: %q %v", line, err)
	}
	out, took := set.runScript(t, "switchover.sh", 0)
	if took > 10*time.Second {
		t.Errorf("switchover.sh took %v: the pod's stop waited on the pause's end, not on the handover", took)
	}
	promoted := set.sentinelMaster(t, 1)
	if promoted != set.ip(1) && promoted != set.ip(2) {
		t.Fatalf("Sentinel 1 names %s after the switchover, want a replica promoted (%s or %s); the script said %q", promoted, set.ip(1), set.ip(2), out)
	}
	if !strings.Contains(out, "hands over to "+promoted) {
		t.Errorf("the script said %q, want it to name the master it handed over to (%s)", out, promoted)
	}
	// The client's connection is closed: its next command fails at once.
	_ = client.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = client.Write([]byte("GET acknowledged\r\n"))
	if line, err := replies.ReadString('\n'); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("a client's connection to the old master after the switchover answered %q (%v), want it closed", line, err)
	}
	// Still paused: the write waits, and redis-cli gives up first.
	if got, err := set.cli(set.ip(0), set.redisPort, "SET", "late", "write"); err == nil {
		t.Errorf("a write to the old master after the switchover answered %q, want it held (no answer)", got)
	}
	if got, err := set.cli(promoted, set.redisPort, "GET", "acknowledged"); err != nil || got != "before-the-drain" {
		t.Errorf("the promoted master holds %q (%v) for the write acknowledged before the drain", got, err)
	}
	// The other Sentinel learns the new master from the leader's hellos.
	deadline := time.Now().Add(10 * time.Second)
	for set.sentinelMaster(t, 2) != promoted {
		if time.Now().After(deadline) {
			t.Fatalf("Sentinel 2 names %s, not %s, 10s after the switchover", set.sentinelMaster(t, 2), promoted)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSwitchoverWithAReplicaAway: one replica's server is stopped. A
// Sentinel asked to fail over could promote it without the writes the
// other replica acknowledged, so the script asks for none: after 10 s it
// unpauses the writes. The Sentinels fail over by themselves to the replica
// with the largest offset (here once the pause held their hellos past
// down-after; in a pod, once the server stops): a write acknowledged by the
// replica left is on whichever master they name.
func TestSwitchoverWithAReplicaAway(t *testing.T) {
	set := startSentinelSet(t, 5)
	set.stop(2)
	if _, err := set.cli(set.ip(0), set.redisPort, "SET", "acknowledged", "by-replica-1"); err != nil {
		t.Fatal(err)
	}
	if got, err := set.cli(set.ip(0), set.redisPort, "WAIT", "1", "2000"); err != nil || got != "1" {
		t.Fatalf("WAIT 1 answered %q (%v), want the replica left to acknowledge", got, err)
	}
	out, took := set.runScript(t, "switchover.sh", 0)
	if !strings.Contains(out, "hands over to none (writes unpaused): not every replica online") || strings.Contains(out, "failover asked") {
		t.Fatalf("the script said %q, want no failover asked with a replica away", out)
	}
	if took < 9*time.Second || took > 15*time.Second {
		t.Errorf("switchover.sh took %v, want its 10 s wait for the replicas", took)
	}
	master := set.sentinelMaster(t, 1)
	if got, err := set.cli(master, set.redisPort, "GET", "acknowledged"); err != nil || got != "by-replica-1" {
		t.Errorf("the master Sentinel 1 names (%s) holds %q (%v) for the acknowledged write", master, got, err)
	}
}

// TestSwitchoverPastASentinelInTILT: the first Sentinel the script would
// ask was stalled for 2.5 s (SIGSTOP, as a starved machine does) and is in
// TILT, where it accepts a failover but starts it only when TILT ends, 30 s
// later. The script asks the other Sentinel, and the handover takes seconds.
func TestSwitchoverPastASentinelInTILT(t *testing.T) {
	set := startSentinelSet(t, 6)
	stalled := set.procs["sentinel-1"]
	stalled.Pause()
	time.Sleep(2500 * time.Millisecond)
	stalled.Resume()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := set.cli(set.ip(1), set.sentinelPort, "INFO", "sentinel")
		if strings.Contains(out, "sentinel_tilt:1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Sentinel 1 not in TILT 5s after a 2.5s stall: %q", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, took := set.runScript(t, "switchover.sh", 0)
	if !strings.Contains(out, "not asked: "+set.ip(1)) || !strings.Contains(out, "failover asked of the Sentinel of "+set.ip(2)) {
		t.Errorf("the script said %q, want the Sentinel in TILT (%s) passed over for %s", out, set.ip(1), set.ip(2))
	}
	if took > 10*time.Second {
		t.Errorf("switchover.sh took %v: the failover waited on TILT's end", took)
	}
	if promoted := set.sentinelMaster(t, 2); promoted != set.ip(1) && promoted != set.ip(2) {
		t.Errorf("Sentinel 2 names %s after the switchover, want a replica promoted", promoted)
	}
}
