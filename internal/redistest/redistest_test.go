package redistest

import (
	"errors"
	"net"
	"strconv"
	"testing"
)

// TestLaunchReportsPortInUse: a redis-server whose port another process
// holds is reported as errPortInUse, which Start answers with new ports;
// any other failure is not.
func TestLaunchReportsPortInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	s := &Server{t: t, Addr: held.Addr().String(), dir: dir, args: []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--logfile", dir + "/redis.log",
	}}
	if err := s.launch(); !errors.Is(err, errPortInUse) {
		t.Fatalf("launch on a held port: %v, want errPortInUse", err)
	}
	if s.Running() {
		t.Fatal("server reported running after it exited")
	}

	dir = t.TempDir()
	s = &Server{t: t, Addr: s.Addr, dir: dir, args: []string{"--no-such-option", "--dir", dir, "--logfile", dir + "/redis.log"}}
	if err := s.launch(); err == nil || errors.Is(err, errPortInUse) {
		t.Fatalf("launch with a bad option: %v, want an error other than errPortInUse", err)
	}
}

// TestFreePortsDistinct: ports chosen together never repeat, so a cluster
// node's bus port is never its own port.
func TestFreePortsDistinct(t *testing.T) {
	for range 50 {
		ports, err := FreePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		if ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
			t.Fatalf("FreePorts(3) = %v, not distinct", ports)
		}
	}
}

// TestStartAndRestart: a started server answers, and answers again on the
// same address after Stop and Restart.
func TestStartAndRestart(t *testing.T) {
	s := Start(t)
	if err := s.Client().Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop()
	s.Restart()
	if err := s.Client().Ping(t.Context()).Err(); err != nil {
		t.Fatalf("after Restart: %v", err)
	}
}
