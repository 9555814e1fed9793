package monitoring

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// listeningAddrs returns the addresses the TCP sockets of process pid listen
// on, read from /proc (Linux). A program that binds port 0 but does not
// report the port it got (redis_exporter logs its flag, ":0") is started on
// port 0 and its port read here: nothing is chosen before the child binds.
func listeningAddrs(pid int) ([]string, error) {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
		if err != nil {
			continue // closed since
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(proc, "net", table))
		if err != nil {
			if os.IsNotExist(err) {
				continue // no IPv6
			}
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			const listen = "0A"
			if len(fields) < 10 || fields[3] != listen || !inodes[fields[9]] {
				continue
			}
			addr, err := procNetAddr(fields[1])
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", table, err)
			}
			addrs = append(addrs, addr)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// procNetAddr decodes a local_address of /proc/net/tcp{,6}: the address as
// 32-bit words in the machine's byte order (little-endian here), a colon,
// the port in hex.
func procNetAddr(s string) (string, error) {
	h, p, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil {
		return "", fmt.Errorf("bad address %q", s)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return "", fmt.Errorf("bad address %q", s)
	}
	ip := make(net.IP, len(raw))
	for w := 0; w < len(raw); w += 4 {
		for i := range 4 {
			ip[w+i] = raw[w+3-i]
		}
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10)), nil
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
