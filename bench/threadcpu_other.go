//go:build !linux

package bench

import "time"

// threadCPU falls back to wall time where the thread's CPU clock is not read.
func threadCPU() time.Duration { return wallSinceStart() }
