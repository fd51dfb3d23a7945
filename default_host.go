//go:build !cuda && !gmlakegpu

package gmlake

import "github.com/gmlake/gmlake/stitch"

// defaultDriver is the driver NewAllocator uses without WithDriver; granularity 0 means the
// driver's default. Without the cuda or gmlakegpu build tag it is the host driver. default_cuda.go
// defines it for those builds: the CUDA driver when a GPU is present, else hostDriver.
func defaultDriver(granularity uint64) (stitch.Driver, error) {
	return hostDriver(granularity)
}
