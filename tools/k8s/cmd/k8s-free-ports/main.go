// Command k8s-free-ports prints N free TCP ports of 127.0.0.1, one a line,
// for the etcd and kube-apiserver of tools/k8s/validate.sh (no ss or python
// needed):
//
//	k8s-free-ports [N]    (N defaults to 1)
package main

import (
	"errors"
	"fmt"
	"io"
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

// freePorts holds every listener until all are open, so that the N ports
// are distinct.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
