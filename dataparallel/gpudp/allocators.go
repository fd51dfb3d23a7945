package gpudp

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/dataparallel"
	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/stitch"
)

// Allocator names the memory every rank's tensors come from.
type Allocator string

// The allocators a Trainer can run on, by their names in baseline.Names.
const (
	// GMLake is one stitching engine per GPU over driver/cuda (dataparallel.Pools).
	GMLake Allocator = baseline.NameGMLake
	// Gorgonia is Gorgonia's pool algorithm (baseline.FirstFit) over one cuMemAlloc arena per GPU.
	Gorgonia Allocator = baseline.NameGorgonia
	// Direct is one cuMemAlloc/cuMemFree per tensor.
	Direct Allocator = baseline.NameDirect
)

// ErrAllocator (baseline.ErrUnknown) is returned for an unknown Allocator.
var ErrAllocator = baseline.ErrUnknown

// RankMemory is what one GPU's allocator held, in bytes.
type RankMemory struct {
	PeakActive    uint64  // largest sum of live tensor bytes (gpu.Device's count)
	PeakReserved  uint64  // largest device memory the allocator held (gmlake: physical chunks; gorgonia: arena high-water mark; direct: = PeakActive)
	Fragmentation float64 // 1 - PeakActive / PeakReserved
	DriverCalls   uint64  // allocator's driver calls so far (gmlake: VMM calls; gorgonia: the arena's)
}

// memorySource is the per-rank allocator behind a gpu.Device, as the Trainer keeps it.
type memorySource struct {
	kind   Allocator
	pools  *dataparallel.Pools  // gmlake: one engine per rank
	arenas []*baseline.FirstFit // gorgonia: one arena per rank
	drv    []*cuda.Driver       // gorgonia: the drivers the arenas came from
}

// cudaDevice is cuMemAlloc memory as baseline.Device, for the Gorgonia pool's arena.
type cudaDevice struct{ d *cuda.Driver }

func (c cudaDevice) Malloc(size uint64) (uintptr, error) { return c.d.MemAlloc(size) }
func (c cudaDevice) Free(ptr uintptr) error              { return c.d.MemFree(ptr) }

// newMemorySource prepares kind's allocators for devices; arena is the Gorgonia pool's arena per
// GPU (0: 90% of the GPU's free memory).
func newMemorySource(kind Allocator, devices []int, arena uint64) (*memorySource, error) {
	ms := &memorySource{kind: kind}
	switch kind {
	case GMLake, "":
		ms.kind = GMLake
		pools, err := dataparallel.NewPools(len(devices), func(r int) (stitch.Driver, error) {
			return cuda.New(cuda.WithDevice(devices[r]))
		})
		if err != nil {
			return nil, err
		}
		ms.pools = pools
	case Gorgonia:
		for _, ordinal := range devices {
			d, err := cuda.New(cuda.WithDevice(ordinal))
			if err != nil {
				return nil, errors.Join(err, ms.close())
			}
			ms.drv = append(ms.drv, d)
			size := arena
			if size == 0 {
				free, _, err := d.MemInfo()
				if err != nil {
					return nil, errors.Join(err, ms.close())
				}
				size = free / 10 * 9 / (2 << 20) * (2 << 20)
			}
			a, err := baseline.NewFirstFit(cudaDevice{d}, size)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("gpudp: GPU %d: %w", ordinal, err), ms.close())
			}
			ms.arenas = append(ms.arenas, a)
		}
	case Direct:
	default:
		return nil, fmt.Errorf("%w %q (have %s, %s, %s)", ErrAllocator, kind, GMLake, Gorgonia, Direct)
	}
	return ms, nil
}

// deviceOption is the gpu.Option that makes rank r's Device allocate from this source.
func (ms *memorySource) deviceOption(r int) ([]gpu.Option, error) {
	switch ms.kind {
	case GMLake:
		e, err := ms.pools.Device(r)
		if err != nil {
			return nil, err
		}
		return []gpu.Option{gpu.WithAllocator(e)}, nil
	case Gorgonia:
		return []gpu.Option{gpu.WithAllocator(ms.arenas[r])}, nil
	}
	return nil, nil
}

// reserved is rank r's peak reserved bytes and driver calls, given its peak active bytes.
func (ms *memorySource) reserved(r int, peakActive uint64) (uint64, uint64) {
	switch ms.kind {
	case GMLake:
		st := ms.pools.Stats()[r]
		return st.PeakReservedBytes, st.TotalDriverCalls()
	case Gorgonia:
		return ms.arenas[r].Reserved(), ms.arenas[r].DriverCalls()
	}
	return peakActive, 0
}

func (ms *memorySource) check() error {
	if ms.kind == GMLake {
		return ms.pools.Check()
	}
	return nil
}

func (ms *memorySource) close() error {
	var errs []error
	if ms.pools != nil {
		errs = append(errs, ms.pools.Close())
		ms.pools = nil
	}
	for _, a := range ms.arenas {
		errs = append(errs, a.Close())
	}
	for _, d := range ms.drv {
		errs = append(errs, d.Close())
	}
	ms.arenas, ms.drv = nil, nil
	return errors.Join(errs...)
}
