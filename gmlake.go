package gmlake

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/memory"
	"github.com/gmlake/gmlake/stitch"
)

// NewAllocator returns a stitching allocator over the driver of WithDriver, or the default driver.
// Close it when done: that releases all its memory and closes the driver.
func NewAllocator(opts ...Option) (*memory.Allocator, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	d := cfg.driver
	if d == nil {
		hostGranularity := cfg.granularity
		if hostGranularity == 0 && cfg.jobSize > 0 {
			hostGranularity = jobGranularity(cfg.jobSize)
		}
		var err error
		if cfg.hostMemory {
			d, err = hostDriver(hostGranularity)
		} else {
			d, err = defaultDriver(cfg.granularity, hostGranularity)
		}
		if err != nil {
			return nil, fmt.Errorf("gmlake: default driver: %w", err)
		}
	} else if cfg.granularity != 0 {
		err := fmt.Errorf("%w: WithGranularity configures the default driver; set the granularity on the driver given to WithDriver", ErrBadOption)
		// WithDriver hands the driver over: a failed constructor still closes it, as memory.NewAllocator does.
		if c, ok := d.(io.Closer); ok {
			err = errors.Join(err, c.Close())
		}
		return nil, err
	}
	return memory.NewAllocator(d, cfg.memoryOptions(d.Granularity())...)
}

// jobGranularity is the host granularity for a job whose live memory peaks near bytes: a
// sixteenth of it, as a power of two between the page size and the 2 MiB default, so that the
// last partly used chunk and page cost a few percent of the job at most.
func jobGranularity(bytes uint64) uint64 {
	page := uint64(os.Getpagesize())
	g := uint64(1) << (bits.Len64(max(bytes/16, 1)) - 1)
	return min(max(g, page), host.DefaultGranularity)
}

// NewTensorEngine returns a gorgonia.org/tensor engine over a new allocator, for tensor.WithEngine and
// gorgonia.WithEngine. Its memory is host memory (WithHostMemory is implied); a driver given to
// WithDriver must give host memory too. Close the allocator when done: e.Allocator().Close().
func NewTensorEngine(opts ...Option) (*memory.TensorEngine, error) {
	a, err := NewAllocator(append([]Option{WithHostMemory()}, opts...)...)
	if err != nil {
		return nil, err
	}
	e, err := memory.NewTensorEngine(a)
	if err != nil {
		return nil, errors.Join(err, a.Close())
	}
	return e, nil
}

// hostDriver is the host driver with the given granularity (0: its default). The default driver
// falls back to it on a machine without a GPU.
func hostDriver(granularity uint64) (stitch.Driver, error) {
	var opts []host.Option
	if granularity != 0 {
		opts = append(opts, host.WithGranularity(granularity))
	}
	d, err := host.New(opts...)
	if err != nil {
		return nil, err
	}
	return d, nil
}
