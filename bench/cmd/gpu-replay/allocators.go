package main

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// granularity is CUDA's on the H200, and the simulator's here, so both runs make the same choices.
const granularity = 2 << 20

// engineOptions are added to every engine the replays make, on the GPU and on the simulator
// (--handle-size).
var engineOptions []stitch.Option

// newEngineAllocator is the stitching engine over d as a baseline.Allocator named name
// (baseline.NameGMLake, or baseline.NameGMLakeUnmarked: the engine not told where iterations
// begin), holding at most capacity bytes (0: whatever d has).
func newEngineAllocator(name string, d stitch.Driver, capacity uint64) (*baseline.GMLake, error) {
	a, err := baseline.New(name, baseline.Config{Capacity: capacity, Driver: d, Engine: engineOptions})
	if err != nil {
		return nil, err
	}
	return a.(*baseline.GMLake), nil
}

// simGMLake is the engine over the simulated driver with the capacity as the device's memory.
func simGMLake(capacity uint64) (baseline.Allocator, error) {
	opts := []sim.Option{sim.WithGranularity(granularity)}
	if capacity > 0 {
		opts = append(opts, sim.WithCapacity(capacity))
	} else {
		opts = append(opts, sim.WithCapacity(1<<50))
	}
	return newEngineAllocator(baseline.NameGMLake, sim.New(opts...), capacity)
}

// cudaDevice is plain cuMemAlloc/cuMemFree memory as a baseline.Device.
type cudaDevice struct{ d *cuda.Driver }

func (c cudaDevice) Malloc(size uint64) (uintptr, error) { return c.d.MemAlloc(size) }
func (c cudaDevice) Free(ptr uintptr) error              { return c.d.MemFree(ptr) }

// streams maps the trace's stream ids to CUDA streams: 0 is the default stream, others are
// created on first use (PyTorch's ids are not CUstream handles).
type streams struct {
	d    *cuda.Driver
	byID map[uint64]stitch.Stream
}

func (s *streams) get(id uint64) (stitch.Stream, error) {
	if id == 0 || s.d == nil {
		return stitch.Stream(id), nil
	}
	if st, ok := s.byID[id]; ok {
		return st, nil
	}
	st, err := s.d.NewStream()
	if err != nil {
		return 0, fmt.Errorf("stream for trace stream %d: %w", id, err)
	}
	if s.byID == nil {
		s.byID = make(map[uint64]stitch.Stream)
	}
	s.byID[id] = st
	return st, nil
}

func (s *streams) close() error {
	var errs []error
	for _, st := range s.byID {
		errs = append(errs, s.d.DestroyStream(st))
	}
	return errors.Join(errs...)
}
