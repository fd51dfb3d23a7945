package reliability

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// Errors a Harness reports about the engine (never about the request).
var (
	ErrViolation = errors.New("reliability: invariant violated") // Check, accounting or shadow map
	ErrLeak      = errors.New("reliability: driver objects leaked")
	ErrHarness   = errors.New("reliability: harness misuse") // an Op naming an unknown ID, say
)

// OpKind says what an Op does.
type OpKind uint8

// The operations a Harness applies.
const (
	OpAlloc      OpKind = iota // Alloc Size bytes on Stream, remembered as ID
	OpFree                     // Free the block remembered as ID
	OpEmptyCache               // EmptyCache
	OpReset                    // Reset: every live block is freed
	OpMark                     // MarkIteration: a training iteration begins (a hint)
)

func (k OpKind) String() string {
	switch k {
	case OpAlloc:
		return "alloc"
	case OpFree:
		return "free"
	case OpEmptyCache:
		return "empty-cache"
	case OpReset:
		return "reset"
	case OpMark:
		return "mark"
	}
	return "unknown"
}

// Op is one request to the engine.
type Op struct {
	Kind   OpKind
	ID     int64
	Size   uint64
	Stream stitch.Stream
}

func (o Op) String() string {
	switch o.Kind {
	case OpAlloc:
		return fmt.Sprintf("alloc #%d %d bytes stream %d", o.ID, o.Size, o.Stream)
	case OpFree:
		return fmt.Sprintf("free #%d", o.ID)
	}
	return o.Kind.String()
}

// Config describes the engine and simulated driver a Harness builds.
type Config struct {
	Capacity      uint64          // physical bytes of the driver (0: sim's default, 1 TiB)
	Granularity   uint64          // 0: sim's default, 2 MiB
	SimOptions    []sim.Option    // faults, event delays
	EngineOptions []stitch.Option // thresholds, budget
}

// Harness is an engine over a simulated driver seen through a Tracker, with a shadow map of the
// live blocks' physical bytes. It is not safe for concurrent use (its Engine, Tracker and Shadow are).
type Harness struct {
	Driver  *sim.Driver
	Tracker *Tracker
	Engine  *stitch.Engine
	Shadow  *Shadow
	Guard   *StreamGuard

	live      map[int64]Block
	liveBytes uint64
	buf       []PhysRange
	freeBuf   []PhysRange
}

// Block is a live block as the harness knows it.
type Block struct {
	Ptr    uintptr
	Size   uint64
	Stream stitch.Stream
}

// NewHarness builds the driver and the engine. When stitch.New fails the error is returned with the
// Harness, whose Driver can still be checked for leaks.
func NewHarness(cfg Config) (*Harness, error) {
	simOpts := []sim.Option{}
	if cfg.Capacity > 0 {
		simOpts = append(simOpts, sim.WithCapacity(cfg.Capacity))
	}
	if cfg.Granularity > 0 {
		simOpts = append(simOpts, sim.WithGranularity(cfg.Granularity))
	}
	d := sim.New(append(simOpts, cfg.SimOptions...)...)
	h := &Harness{Driver: d, Tracker: NewTracker(d), Shadow: NewShadow(), Guard: NewStreamGuard(), live: make(map[int64]Block)}
	h.Tracker.Watch(h.Guard)
	e, err := stitch.New(h.Tracker, cfg.EngineOptions...)
	h.Engine = e
	return h, err
}

// Live is the block remembered as id.
func (h *Harness) Live(id int64) (Block, bool) {
	b, ok := h.live[id]
	return b, ok
}

// LiveIDs is the number of live blocks the harness holds.
func (h *Harness) LiveIDs() int { return len(h.live) }

// Apply runs op. It returns the engine's error for a refused request, or an ErrViolation error when
// the engine handed out bytes a live block holds, or an ErrHarness error for an Op that makes no
// sense (freeing an unknown ID, reusing a live ID).
func (h *Harness) Apply(op Op) error {
	switch op.Kind {
	case OpAlloc:
		return h.alloc(op)
	case OpFree:
		return h.free(op.ID)
	case OpEmptyCache:
		return h.Engine.EmptyCache()
	case OpReset:
		for _, b := range h.live { // Reset frees them all, each on its stream
			if err := h.freed(b); err != nil {
				return err
			}
		}
		h.Shadow.ReleaseAll()
		clear(h.live)
		h.liveBytes = 0
		return h.Engine.Reset()
	case OpMark:
		h.Engine.MarkIteration()
		return nil
	}
	return fmt.Errorf("%w: op kind %d", ErrHarness, op.Kind)
}

func (h *Harness) alloc(op Op) error {
	if _, ok := h.live[op.ID]; ok {
		return fmt.Errorf("%w: alloc of live id %d", ErrHarness, op.ID)
	}
	ptr, err := h.Engine.Alloc(op.Size, op.Stream)
	if err != nil {
		return err
	}
	h.live[op.ID] = Block{Ptr: ptr, Size: op.Size, Stream: op.Stream}
	h.liveBytes += op.Size
	if err := h.claim(ptr, op.Size); err != nil {
		return fmt.Errorf("%w: %s at %#x: %w", ErrViolation, op, ptr, err)
	}
	if err := h.Guard.HandOut(op.Stream, ptr, h.buf); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrViolation, op, err)
	}
	return nil
}

// freed tells the stream guard that live block b is being freed on its stream.
func (h *Harness) freed(b Block) error {
	var err error
	h.freeBuf, err = h.Tracker.AppendResolve(h.freeBuf[:0], b.Ptr, b.Size)
	if err != nil {
		return fmt.Errorf("%w: live block %#x is not mapped: %w", ErrViolation, b.Ptr, err)
	}
	h.Guard.Freed(b.Stream, h.freeBuf)
	return nil
}

// claim records the physical bytes of a new live block in the shadow map.
func (h *Harness) claim(ptr uintptr, size uint64) error {
	var err error
	h.buf, err = h.Tracker.AppendResolve(h.buf[:0], ptr, size)
	if err != nil {
		return err
	}
	return h.Shadow.Claim(ptr, h.buf)
}

func (h *Harness) free(id int64) error {
	b, ok := h.live[id]
	if !ok {
		return fmt.Errorf("%w: free of unknown id %d", ErrHarness, id)
	}
	if err := h.Shadow.Release(b.Ptr); err != nil && !errors.Is(err, ErrNotClaimed) {
		return err
	}
	var err error
	h.freeBuf, err = h.Tracker.AppendResolve(h.freeBuf[:0], b.Ptr, b.Size) // mapped until the free
	if err != nil {
		return fmt.Errorf("%w: live block %#x is not mapped: %w", ErrViolation, b.Ptr, err)
	}
	// Before the free: an event the free records covers it. A refused free leaves the bytes in
	// flight on the block's own stream, which changes nothing (it is still live).
	h.Guard.Freed(b.Stream, h.freeBuf)
	if err := h.Engine.Free(b.Ptr, b.Size); err != nil {
		_ = h.claim(b.Ptr, b.Size) // still live
		return err
	}
	delete(h.live, id)
	h.liveBytes -= b.Size
	return nil
}

// Verify runs the engine's Check and compares its accounting with the driver's and the harness's;
// every difference is an ErrViolation.
func (h *Harness) Verify() error {
	var errs []error
	if err := h.Engine.Check(); err != nil {
		errs = append(errs, err)
	}
	s, l := h.Engine.Stats(), h.Driver.Live()
	if s.ReservedBytes != l.PhysicalBytes {
		errs = append(errs, fmt.Errorf("engine reserves %d physical bytes, driver holds %d", s.ReservedBytes, l.PhysicalBytes))
	}
	if s.VirtualBytes != l.VirtualBytes {
		errs = append(errs, fmt.Errorf("engine reserves %d virtual bytes, driver holds %d", s.VirtualBytes, l.VirtualBytes))
	}
	if s.LiveBytes != h.liveBytes || s.LiveBlocks != len(h.live) {
		errs = append(errs, fmt.Errorf("engine has %d live bytes in %d blocks, caller holds %d in %d",
			s.LiveBytes, s.LiveBlocks, h.liveBytes, len(h.live)))
	}
	if m := h.Tracker.Mappings(); m != l.Mappings {
		errs = append(errs, fmt.Errorf("tracker records %d mappings, driver holds %d", m, l.Mappings))
	}
	if err := h.Guard.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrViolation, errors.Join(errs...))
}

// Close closes the engine and forgets every live block. Close gives every driver object back even
// when it cannot wait for the device, so the stream guard stops checking releases.
func (h *Harness) Close() error {
	h.Guard.Disarm()
	h.Shadow.ReleaseAll()
	clear(h.live)
	h.liveBytes = 0
	if h.Engine == nil {
		return nil
	}
	return h.Engine.Close()
}

// Leaks returns an ErrLeak error naming whatever the driver still holds.
func (h *Harness) Leaks() error { return LeakCheck(h.Driver.Live()) }

// LeakCheck returns an ErrLeak error when l holds anything.
func LeakCheck(l sim.Live) error {
	if l == (sim.Live{}) {
		return nil
	}
	return fmt.Errorf("%w: %d handles (%d bytes), %d ranges (%d bytes), %d mappings, %d events",
		ErrLeak, l.Handles, l.PhysicalBytes, l.Ranges, l.VirtualBytes, l.Mappings, l.Events)
}
