package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time the calling OS thread has used (CLOCK_THREAD_CPUTIME_ID): unlike wall
// time it does not count the time other processes had the core, so per-iteration figures hold on
// a loaded machine. The replay locks its goroutine to its thread while it reads it.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return wallSinceStart()
	}
	return time.Duration(ts.Nano())
}
