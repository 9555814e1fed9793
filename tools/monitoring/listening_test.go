package monitoring

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/prometheus/procfs"
)

// listeningAddrs returns the addresses the TCP sockets of process pid listen
// on, read from /proc (Linux). A program that binds port 0 but does not
// report the port it got (redis_exporter logs its flag, ":0") is started on
// port 0 and its port read here: nothing is chosen before the child binds.
func listeningAddrs(pid int) ([]string, error) {
	proc, err := procfs.NewProc(pid)
	if err != nil {
		return nil, err
	}
	fds, err := proc.FileDescriptorTargets()
	if err != nil {
		return nil, err
	}
	sockets := map[string]bool{} // "socket:[inode]"
	for _, fd := range fds {
		sockets[fd] = true
	}
	// The child shares this process's network namespace, so its tables.
	procFS, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, err
	}
	var addrs []string
	//lint:ignore SA1019 the netlink socket diagnostics it points to would be a new dependency for one test helper
	for _, table := range []func() (procfs.NetTCP, error){procFS.NetTCP, procFS.NetTCP6} {
		lines, err := table()
		if errors.Is(err, fs.ErrNotExist) {
			continue // no IPv6
		} else if err != nil {
			return nil, err
		}
		for _, l := range lines {
			const listen = 0x0A
			if l.St == listen && sockets["socket:["+strconv.FormatUint(l.Inode, 10)+"]"] {
				addrs = append(addrs, net.JoinHostPort(l.LocalAddr.String(), strconv.FormatUint(l.LocalPort, 10)))
			}
		}
	}
	return addrs, nil
}

// TestListeningAddrs reads the port of a ":0" listener from /proc, as
// startRedisExporter does for the exporter, which does not report it.
func TestListeningAddrs(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		host := map[string]string{"tcp4": "127.0.0.1", "tcp6": "::1"}[network]
		l, err := net.Listen(network, net.JoinHostPort(host, "0"))
		if err != nil {
			t.Logf("%s: %v", network, err) // a machine without IPv6
			continue
		}
		addrs, err := listeningAddrs(os.Getpid())
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, a := range addrs {
			found = found || a == l.Addr().String()
		}
		if !found {
			t.Errorf("%s listener %s not among %v", network, l.Addr(), addrs)
		}
	}
}
