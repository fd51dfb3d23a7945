package bench

import "time"

// processStart anchors wallSinceStart.
var processStart = time.Now()

// wallSinceStart is the wall time since the package was loaded, the fallback of threadCPU.
func wallSinceStart() time.Duration { return time.Since(processStart) }
