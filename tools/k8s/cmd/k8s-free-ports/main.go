// Command k8s-free-ports prints N free TCP ports of 127.0.0.1, one a line,
// for the etcd and kube-apiserver of tools/k8s/validate.sh (no ss or python
// needed):
//
//	k8s-free-ports [N]    (N defaults to 1)
//
// A port is free when chosen, not when the server it is handed to binds it:
// another process may take it in between. The ports come from below the
// kernel's ephemeral range, which it hands to every ":0" listener and
// outgoing connection on the machine; there only another choice like this
// one takes them. A caller must still start its servers again (on new
// ports) when one exits with "address already in use".
package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-free-ports:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	n := 1
	switch len(args) {
	case 0:
	case 1:
		var err error
		if n, err = strconv.Atoi(args[0]); err != nil || n < 1 {
			return fmt.Errorf("N: want a positive number, not %q", args[0])
		}
	default:
		return errors.New("usage: k8s-free-ports [N]")
	}
	ports, err := freePorts(n)
	if err != nil {
		return err
	}
	for _, p := range ports {
		fmt.Fprintln(stdout, p)
	}
	return nil
}

// freePorts chooses n distinct ports from below the ephemeral range, each
// held until all are.
func freePorts(n int) ([]int, error) {
	const lowest = 10000
	top := ephemeralLow()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("no %d free ports of 127.0.0.1 in %d..%d after %d tries", n, lowest, top-1, tries)
		}
		port := lowest + rand.IntN(top-lowest)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken, or chosen already and held below
		}
		defer l.Close()
		ports = append(ports, port)
	}
	return ports, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// net.ipv4.ip_local_port_range; 32768, its default, where it cannot be read
// or leaves too few ports below it).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo <= 12000 {
		return 32768
	}
	return lo
}
