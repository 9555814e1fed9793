//go:build !linux

package load

import "time"

func preciseSleeper() (sleep func(time.Duration), done func()) {
	return time.Sleep, func() {}
}
