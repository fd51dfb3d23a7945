package pool

import (
	"fmt"
	"slices"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/stitch"
)

// Names are the allocators of baseline.Names that New runs on a GPU, in the order results list
// them.
var Names = []string{baseline.NameGMLake, baseline.NameGMLakeUnmarked, baseline.NameGorgonia, baseline.NameDirect}

// ErrUnknown (baseline.ErrUnknown) is returned by New for a name not in Names.
var ErrUnknown = baseline.ErrUnknown

// Pool is device memory for a gpu.Device, with the counters the comparison reports. Reserved is the
// device memory held now, PeakReserved its high-water mark; for "gorgonia" both are the arena's
// high-water mark: the smallest arena that would have served the run (the arena itself, the
// capacity, is taken whole at the start). DriverCalls counts the CUDA calls made for memory so far
// (VMM calls for gmlake, cuMemAlloc/cuMemFree for the others).
type Pool interface {
	baseline.Allocator
	PeakReserved() uint64
	// Trim returns cached memory no live block uses to the device (gmlake's EmptyCache; the others
	// cache nothing they could return: the arena is one allocation, direct caches nothing).
	Trim() error
}

// New returns the named pool over drv holding at most capacity bytes (0: the device's memory, and
// for "gorgonia" an arena of 80% of the free memory). engineOptions go to gmlake's engine.
func New(name string, drv *cuda.Driver, capacity uint64, engineOptions ...stitch.Option) (Pool, error) {
	switch name {
	case baseline.NameGMLake, baseline.NameGMLakeUnmarked:
		opts := slices.Clone(engineOptions)
		if capacity > 0 {
			opts = append(opts, stitch.WithCapacity(capacity))
		}
		e, err := stitch.New(drv, opts...)
		if err != nil {
			return nil, err
		}
		if name == baseline.NameGMLakeUnmarked {
			return unmarkedEngine{engine{e}}, nil
		}
		return engine{e}, nil
	case baseline.NameGorgonia:
		arena := capacity
		if arena == 0 {
			free, _, err := drv.MemInfo()
			if err != nil {
				return nil, err
			}
			arena = free / 5 * 4
		}
		f, err := baseline.NewFirstFit(&device{drv: drv}, arena)
		if err != nil {
			return nil, err
		}
		return &peaked{Allocator: f}, nil
	case baseline.NameDirect:
		return &peaked{Allocator: baseline.NewDirect(&device{drv: drv, capacity: capacity})}, nil
	}
	return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknown, name, Names)
}

// engine is the stitching engine as a Pool. Every request is made on the engine's stream 0: the
// executor queues all its work on one stream (the Device's), so blocks are reused in stream order
// and need no events, and the engine keeps its fast path for stream 0 (its "hot" stream) only;
// a request on any other stream switches it to multi-stream mode, where every free records a CUDA
// event and reuse waits for it (measured on the H200: ~1 event call per free, and blocks held back
// until their events complete).
type engine struct{ *stitch.Engine }

func (e engine) Alloc(size uint64, _ stitch.Stream) (uintptr, error) { return e.Engine.Alloc(size, 0) }

func (engine) Name() string { return baseline.NameGMLake }

// unmarkedEngine is the engine told no iteration: the trainer's marks stop here, and the engine
// finds the iterations from the live bytes itself (stitch/iterfinder.go).
type unmarkedEngine struct{ engine }

func (unmarkedEngine) Name() string             { return baseline.NameGMLakeUnmarked }
func (unmarkedEngine) MarkIteration()           {}
func (e engine) Reserved() uint64               { return e.Stats().ReservedBytes }
func (e engine) PeakReserved() uint64           { return e.Stats().PeakReservedBytes }
func (e engine) DriverCalls() uint64            { return e.Stats().TotalDriverCalls() }
func (e engine) Free(p uintptr, n uint64) error { return e.Engine.Free(p, n) }
func (e engine) Trim() error                    { return e.EmptyCache() }

// CallsByKind counts the engine's driver calls by kind ("map", "create", ...) and its requests by
// outcome ("exact", "split", "stitch", "new_chunks").
func (e engine) CallsByKind() map[string]uint64 {
	st := e.Stats()
	out := map[string]uint64{}
	for k := range stitch.NumCallKinds {
		if n := st.DriverCalls.Of(k); n > 0 {
			out[k.String()] = n
		}
	}
	for o := range stitch.NumOutcomes {
		out["outcome_"+o.String()] = st.Outcomes.Of(o)
	}
	return out
}

// peaked adds the peak of Reserved to a baseline allocator.
type peaked struct {
	baseline.Allocator
	peak uint64
}

func (p *peaked) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
	ptr, err := p.Allocator.Alloc(size, s)
	if err == nil {
		p.peak = max(p.peak, p.Allocator.Reserved())
	}
	return ptr, err
}

func (p *peaked) PeakReserved() uint64 { return p.peak }
func (p *peaked) Trim() error          { return nil }

// device is cuMemAlloc/cuMemFree (driver/cuda) as a baseline.Device, refusing to hold more than
// capacity bytes (rounded as cudaMalloc rounds, to 512) when capacity > 0.
type device struct {
	drv      *cuda.Driver
	capacity uint64
	used     uint64
	sizes    map[uintptr]uint64
}

func (d *device) Malloc(size uint64) (uintptr, error) {
	n := (size + 511) / 512 * 512
	if d.capacity > 0 && d.used+n > d.capacity {
		return 0, fmt.Errorf("cuMemAlloc %d bytes with %d of %d in use: %w", size, d.used, d.capacity, baseline.ErrOutOfMemory)
	}
	p, err := d.drv.MemAlloc(size)
	if err != nil {
		return 0, err
	}
	if d.sizes == nil {
		d.sizes = map[uintptr]uint64{}
	}
	d.sizes[p] = n
	d.used += n
	return p, nil
}

func (d *device) Free(ptr uintptr) error {
	if err := d.drv.MemFree(ptr); err != nil {
		return err
	}
	d.used -= d.sizes[ptr]
	delete(d.sizes, ptr)
	return nil
}
