package gmlake

import (
	"errors"

	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/stitch"
)

// defaultDriver is the driver NewAllocator uses without WithDriver: the CUDA driver on device 0
// when this machine has a usable GPU (a driver library, a device, virtual memory management),
// else the host driver; granularity 0 means the driver's default, and hostGranularity is the host
// driver's (WithGranularity, or WithJobSize's choice: CUDA keeps the device's). Every build has both: the CUDA
// driver library is opened at run time, so a binary built anywhere picks the GPU where there is
// one. Other CUDA failures are returned, not hidden behind a fallback.
func defaultDriver(granularity, hostGranularity uint64) (stitch.Driver, error) {
	var opts []cuda.Option
	if granularity != 0 {
		opts = append(opts, cuda.WithGranularity(granularity))
	}
	d, err := cuda.New(opts...)
	if errors.Is(err, cuda.ErrUnavailable) {
		return hostDriver(hostGranularity)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}
