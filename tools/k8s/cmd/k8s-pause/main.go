// Command k8s-pause is the sandbox ("pause") container of the test cluster's
// pods: it holds the pod's namespaces and does nothing until it is told to
// stop. Kubernetes' own pause is C (build/pause/linux/pause.c) and is pulled
// from a registry; this one is built from the module like the rest of the
// cluster (tools/k8s/cluster.sh).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("k8s-pause")
		return
	}
	// As PID 1 of its namespace it gets no default signal handlers: stop on
	// SIGINT and SIGTERM explicitly, and reap any orphan adopted through a
	// shared PID namespace.
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
