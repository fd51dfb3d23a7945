package memory

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
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

	closed        atomic.Bool // set once Close has given everything back
	closeMu       sync.Mutex  // serializes Close
	engineClosed  bool        // the engine's Close succeeded; guarded by closeMu
	closeFailed   bool        // the engine's last Close failed; guarded by closeMu
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

// HostAccessible says whether the driver's memory is host memory Go code may read and write
// (driver/host); false for CUDA device memory and for the simulated driver, which has no memory
// behind its addresses. train/vm refuses an Allocator that answers false.
func (a *Allocator) HostAccessible() bool {
	h, ok := a.driver.(hostAccessible)
	return ok && h.HostAccessible()
}

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
	return newBlock(addr, size, a), nil
}

// Free returns mem, which Get returned for size bytes. A second Free of the same handle fails with
// stitch.ErrDoubleFree (also once its address has been handed out again: the new owner's block is
// untouched), another size with stitch.ErrSizeMismatch, memory not from this Allocator (nil, a
// typed nil *Block, another Allocator's block) with stitch.ErrUnknownPointer, and any call after
// Close with stitch.ErrClosed; the Allocator is unchanged by a refused Free. A tensor.Memory other
// than a *Block is looked up by address alone, so only the handle Get returned is proof against a
// stale second Free.
func (a *Allocator) Free(mem tensor.Memory, size int64) error {
	if a.closed.Load() {
		return fmt.Errorf("memory: free: %w", stitch.ErrClosed)
	}
	if b, ok := mem.(*Block); ok {
		return a.freeBlock(b, size)
	}
	if isNil(mem) {
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

// freeBlock frees a handle Get returned. The freed flag is claimed before the engine's Free and given
// back if the engine refuses, so that of two Frees of one handle exactly one reaches the engine.
func (a *Allocator) freeBlock(b *Block, size int64) error {
	switch {
	case b == nil:
		return fmt.Errorf("memory: free of a nil *Block: %w", stitch.ErrUnknownPointer)
	case b.owner != a:
		return fmt.Errorf("memory: free %#x: not a block of this allocator: %w", b.addr, stitch.ErrUnknownPointer)
	case size <= 0:
		return fmt.Errorf("memory: free %#x with size %d: %w", b.addr, size, stitch.ErrInvalidSize)
	case size != int64(b.MemSize()):
		return fmt.Errorf("memory: free %#x: allocated with %d bytes, freed with %d: %w", b.addr, b.MemSize(), size, stitch.ErrSizeMismatch)
	case !b.claim(size):
		return fmt.Errorf("memory: free %#x (%d bytes): %w", b.addr, size, stitch.ErrDoubleFree)
	}
	if err := a.engine.Free(b.addr, uint64(size)); err != nil {
		b.unclaim(size)
		return fmt.Errorf("memory: free %#x (%d bytes): %w", b.addr, size, err)
	}
	return nil
}

// isNil says whether mem is nil or a nil pointer of some type, whose methods could not be called.
func isNil(mem tensor.Memory) bool {
	if mem == nil {
		return true
	}
	v := reflect.ValueOf(mem)
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
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
// MarkIteration). It is a hint, safe to omit: without it the engine finds where iterations begin
// from the live bytes; after Close it does nothing.
func (a *Allocator) MarkIteration() { a.engine.MarkIteration() }

// ResetAllocator marks a step boundary and frees nothing: live blocks stay live and physical memory
// stays cached. Gorgonia's cuda.Arena contract has it free everything, but an Allocator cannot know
// whether a tensor still uses a block (tensor.Dense keeps only the address of the memory an engine
// returned), and freeing a block a tensor still reads would corrupt training without an error. So
// it only tells the engine that an iteration begins (MarkIteration), the hint that lets a repeated
// step replay its placements. Memory comes back by Free or Put, by a Reclaimer between the steps of
// Gorgonia's TapeMachine, by train/vm (which frees every buffer at its last use), or by Close.
func (a *Allocator) ResetAllocator() { a.engine.MarkIteration() }

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
// call fails with stitch.ErrClosed. A Close that fails (the driver refused to give memory back)
// returns the driver's error and leaves the Allocator open to be closed again: the retry gives back
// what the first could not, then closes the driver.
func (a *Allocator) Close() error {
	a.closeMu.Lock()
	defer a.closeMu.Unlock()
	if a.closed.Load() {
		return fmt.Errorf("memory: close: %w", stitch.ErrClosed)
	}
	if !a.engineClosed {
		// The engine refuses new work from its first Close on; a failed one keeps what the driver
		// would not take and gives it back when called again.
		err := a.engine.Close()
		retried := a.closeFailed
		a.closeFailed = err != nil
		// A retry the engine answers with ErrClosed has nothing left to give back.
		if err != nil && !(retried && errors.Is(err, stitch.ErrClosed)) {
			return fmt.Errorf("memory: close (call Close again to retry): %w", err)
		}
		a.engineClosed = true
	}
	if c, ok := a.driver.(io.Closer); ok {
		if err := c.Close(); err != nil {
			return fmt.Errorf("memory: close the driver (call Close again to retry): %w", err)
		}
	}
	a.closed.Store(true)
	return nil
}
