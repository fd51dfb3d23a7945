//go:build cuda

package main

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// granularity is CUDA's on the H200, and the simulator's here, so both runs make the same choices.
const granularity = 2 << 20

// engineAllocator is the stitching engine as a bench.Allocator, over any driver.
type engineAllocator struct {
	e *stitch.Engine
}

func newEngineAllocator(d stitch.Driver, capacity uint64) (*engineAllocator, error) {
	var opts []stitch.Option
	if capacity > 0 {
		opts = append(opts, stitch.WithCapacity(capacity))
	}
	e, err := stitch.New(d, opts...)
	if err != nil {
		return nil, err
	}
	return &engineAllocator{e: e}, nil
}

func (a *engineAllocator) Name() string { return "gmlake" }
func (a *engineAllocator) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
	return a.e.Alloc(size, s)
}
func (a *engineAllocator) Free(ptr uintptr, size uint64) error { return a.e.Free(ptr, size) }
func (a *engineAllocator) Reserved() uint64                    { return a.e.Stats().ReservedBytes }
func (a *engineAllocator) DriverCalls() uint64                 { return a.e.Stats().TotalDriverCalls() }
func (a *engineAllocator) Check() error                        { return a.e.Check() }
func (a *engineAllocator) Close() error                        { return a.e.Close() }

// simGMLake is the engine over the simulated driver with the capacity as the device's memory.
func simGMLake(capacity uint64) (bench.Allocator, error) {
	opts := []sim.Option{sim.WithGranularity(granularity)}
	if capacity > 0 {
		opts = append(opts, sim.WithCapacity(capacity))
	} else {
		opts = append(opts, sim.WithCapacity(1<<50))
	}
	return newEngineAllocator(sim.New(opts...), capacity)
}

// cudaDevice is plain cuMemAlloc/cuMemFree memory as a bench.Device.
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
