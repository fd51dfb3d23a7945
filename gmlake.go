package gmlake

import (
	"errors"
	"fmt"
	"io"

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
		var err error
		if d, err = defaultDriver(cfg.granularity); err != nil {
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
	return memory.NewAllocator(d, cfg.memoryOptions()...)
}

// NewTensorEngine returns a gorgonia.org/tensor engine over a new allocator, for tensor.WithEngine and
// gorgonia.WithEngine. The driver must give host memory (the host driver does; the default driver
// on a GPU machine does not: name the host driver with WithDriver there). Close the allocator when done:
// e.Allocator().Close().
func NewTensorEngine(opts ...Option) (*memory.TensorEngine, error) {
	a, err := NewAllocator(opts...)
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
