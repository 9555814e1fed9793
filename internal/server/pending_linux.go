package server

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// pendingBytes is how many bytes wait unread in conn's receive buffer: a
// request that arrived on a connection net/http still counts as idle because
// the goroutine that will read it has not run yet (a stalled or throttled
// process). ok is false when it cannot be told.
func pendingBytes(conn any) (n int, ok bool) {
	sc, isSys := conn.(syscall.Conn)
	if !isSys {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ioErr error
	if err := raw.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil || ioErr != nil {
		return 0, false
	}
	return n, true
}
