package load

import (
	"runtime"
	"syscall"
	"time"
)

// prSetTimerSlack is PR_SET_TIMERSLACK: the thread's timer slack in ns, 0 for
// the default (50 µs).
const prSetTimerSlack = 29

// preciseSleeper returns a sleep that wakes within some tens of microseconds,
// and the function that ends its use. The Go runtime's timers wake about a
// millisecond late on some kernels, which would add up to a millisecond of
// the generator's own lateness to every open-loop latency; nanosleep(2) on a
// locked thread with a 1 ns timer slack does not. The thread is unlocked (and
// its slack reset) afterwards rather than left to exit, because a child
// process started from it would get its parent-death signal.
func preciseSleeper() (sleep func(time.Duration), done func()) {
	runtime.LockOSThread()
	_, _, _ = syscall.Syscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	sleep = func(d time.Duration) {
		ts := syscall.NsecToTimespec(int64(d))
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
	}
	done = func() {
		_, _, _ = syscall.Syscall(syscall.SYS_PRCTL, prSetTimerSlack, 0, 0)
		runtime.UnlockOSThread()
	}
	return sleep, done
}
