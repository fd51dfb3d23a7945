package main

import (
	"fmt"

	"github.com/gmlake/gmlake"
	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/memory"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/train/vm"
)

// runMemory is the memory a run allocates from: gmlake's stitched host memory, or the Go heap.
type runMemory struct {
	alloc  vm.Allocator
	gmlake *memory.Allocator // nil for the Go heap
}

// gmlakeOptions are the engine settings of the run, shared by the real allocator and the replay.
func gmlakeOptions(c cli) []stitch.Option {
	return []stitch.Option{stitch.WithSmallThreshold(uint64(c.SmallThreshold)), stitch.WithMinStitch(uint64(c.MinStitch))}
}

func newMemory(c cli) (*runMemory, error) {
	switch c.Allocator {
	case "go":
		return &runMemory{alloc: &vm.GoAllocator{}}, nil
	case "gmlake":
		// The host driver, named: on a GPU machine the default driver is
		// CUDA's, whose memory the CPU executor cannot read.
		d, err := host.New(host.WithGranularity(uint64(c.Granularity)))
		if err != nil {
			return nil, err
		}
		a, err := gmlake.NewAllocator(gmlake.WithDriver(d),
			gmlake.WithSmallThreshold(uint64(c.SmallThreshold)), gmlake.WithMinStitch(uint64(c.MinStitch)))
		if err != nil {
			return nil, err
		}
		return &runMemory{alloc: a, gmlake: a}, nil
	default:
		return nil, fmt.Errorf("unknown allocator %q", c.Allocator)
	}
}

func (m *runMemory) Close() error {
	if m.gmlake == nil {
		return nil
	}
	if err := m.gmlake.Check(); err != nil {
		return fmt.Errorf("gmlake consistency check: %w", err)
	}
	return m.gmlake.Close()
}
