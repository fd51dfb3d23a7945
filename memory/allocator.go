package memory

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/stitch"
)

// Allocator is Gorgonia's cuda.Arena over a stitching engine. It is safe for concurrent use.
type Allocator struct {
	engine *stitch.Engine
	driver stitch.Driver
	log    *slog.Logger

	closed        atomic.Bool
	putRejections atomic.Uint64
	mu            sync.Mutex // guards lastPutErr
	lastPutErr    error
}

// Stats are the engine's statistics plus the Allocator's own counters.
type Stats struct {
	stitch.Stats
	// PutRejections counts Put calls the engine refused (see LastPutError).
	PutRejections uint64
}

// NewAllocator builds a stitching engine over d and takes ownership of d: Close closes it when it is
// an io.Closer, and so does a failing NewAllocator.
func NewAllocator(d stitch.Driver, opts ...Option) (*Allocator, error) {
	cfg := config{logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	if d == nil {
		return nil, errors.New("memory: nil driver")
	}
	engineOpts := append([]stitch.Option{stitch.WithLogger(cfg.logger)}, cfg.engineOptions...)
	e, err := stitch.New(d, engineOpts...)
	if err != nil {
		if c, ok := d.(io.Closer); ok {
			err = errors.Join(err, c.Close())
		}
		return nil, fmt.Errorf("memory: new allocator: %w", err)
	}
	return &Allocator{engine: e, driver: d, log: cfg.logger}, nil
}

// Driver is the driver the Allocator allocates from.
func (a *Allocator) Driver() stitch.Driver { return a.driver }

// Granularity is the driver's unit of physical memory.
func (a *Allocator) Granularity() uint64 { return a.engine.Granularity() }

// Get allocates size bytes. A size of zero or less fails with stitch.ErrInvalidSize, one the device
// cannot hold with stitch.ErrTooLarge or stitch.ErrOutOfMemory, and any call after Close with
// stitch.ErrClosed.
func (a *Allocator) Get(size int64) (tensor.Memory, error) {
	if a.closed.Load() {
		return nil, fmt.Errorf("memory: get %d bytes: %w", size, stitch.ErrClosed)
	}
	if size <= 0 {
		return nil, fmt.Errorf("memory: get %d bytes: %w", size, stitch.ErrInvalidSize)
	}
	addr, err := a.engine.Alloc(uint64(size), 0)
	if err != nil {
		return nil, fmt.Errorf("memory: get %d bytes: %w", size, err)
	}
	return &Block{addr: addr, size: size}, nil
}

// Free returns mem, which Get returned for size bytes. Memory not from this Allocator fails with
// stitch.ErrUnknownPointer, a second Free with stitch.ErrDoubleFree, another size with
// stitch.ErrSizeMismatch, any call after Close with stitch.ErrClosed; the Allocator is unchanged
// by a refused Free.
func (a *Allocator) Free(mem tensor.Memory, size int64) error {
	if a.closed.Load() {
		return fmt.Errorf("memory: free: %w", stitch.ErrClosed)
	}
	if mem == nil {
		return fmt.Errorf("memory: free of nil memory: %w", stitch.ErrUnknownPointer)
	}
	if size <= 0 {
		return fmt.Errorf("memory: free %#x with size %d: %w", mem.Uintptr(), size, stitch.ErrInvalidSize)
	}
	if err := a.engine.Free(mem.Uintptr(), uint64(size)); err != nil {
		return fmt.Errorf("memory: free %#x (%d bytes): %w", mem.Uintptr(), size, err)
	}
	return nil
}

// Put is Free for Gorgonia's interface, which has no error result: a refusal is logged, counted in
// Stats().PutRejections and kept for LastPutError.
func (a *Allocator) Put(mem tensor.Memory, size int64) {
	if err := a.Free(mem, size); err != nil {
		a.putRejections.Add(1)
		a.mu.Lock()
		a.lastPutErr = err
		a.mu.Unlock()
		a.log.Warn("gmlake: put rejected", "err", err)
	}
}

// LastPutError is the error of the most recent rejected Put, nil if none was rejected.
func (a *Allocator) LastPutError() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastPutErr
}

// MarkIteration tells the engine that a training iteration begins, so that an iteration of a shape
// seen before replays the placements of the last one and makes no driver call (stitch.Engine's
// MarkIteration). It is a hint, safe to omit; after Close it does nothing.
func (a *Allocator) MarkIteration() { a.engine.MarkIteration() }

// ResetAllocator frees every live block (Gorgonia's VM.Reset calls it). Failures are logged; Reset
// returns them.
func (a *Allocator) ResetAllocator() {
	if err := a.Reset(); err != nil {
		a.log.Warn("gmlake: reset failed", "err", err)
	}
}

// Reset frees every live block; physical memory stays cached for reuse (see EmptyCache).
func (a *Allocator) Reset() error {
	if a.closed.Load() {
		return fmt.Errorf("memory: reset: %w", stitch.ErrClosed)
	}
	if err := a.engine.Reset(); err != nil {
		return fmt.Errorf("memory: reset: %w", err)
	}
	return nil
}

// EmptyCache gives the driver back the physical memory no live block uses.
func (a *Allocator) EmptyCache() error {
	if a.closed.Load() {
		return fmt.Errorf("memory: empty cache: %w", stitch.ErrClosed)
	}
	if err := a.engine.EmptyCache(); err != nil {
		return fmt.Errorf("memory: empty cache: %w", err)
	}
	return nil
}

// Stats reports the engine's statistics and the Put rejections. After Close it reports the last
// statistics the engine kept.
func (a *Allocator) Stats() Stats {
	return Stats{Stats: a.engine.Stats(), PutRejections: a.putRejections.Load()}
}

// Check walks the engine's pools, blocks and mappings and returns every broken invariant, nil when
// all is consistent.
func (a *Allocator) Check() error {
	if a.closed.Load() {
		return fmt.Errorf("memory: check: %w", stitch.ErrClosed)
	}
	return a.engine.Check()
}

// Close releases everything: the engine's memory, then the driver when it is an io.Closer. Any later
// call fails with stitch.ErrClosed.
func (a *Allocator) Close() error {
	if a.closed.Swap(true) {
		return fmt.Errorf("memory: close: %w", stitch.ErrClosed)
	}
	err := a.engine.Close()
	if c, ok := a.driver.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	if err != nil {
		return fmt.Errorf("memory: close: %w", err)
	}
	return nil
}
