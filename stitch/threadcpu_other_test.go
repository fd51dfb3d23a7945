//go:build !linux

package stitch_test

import "time"

// threadCPU is the calling thread's CPU time where the system gives it; here it does not.
func threadCPU() (time.Duration, bool) { return 0, false }
