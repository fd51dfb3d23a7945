package baseline

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/stitch"
)

// GMLake adapts the stitching engine (package stitch) to Allocator, so that it is compared with the
// baselines through the same interface. Reserved is the engine's physical bytes and DriverCalls
// every driver call it made, of every kind.
type GMLake struct {
	eng      *stitch.Engine
	capacity uint64 // as given to stitch.WithCapacity, for error messages; 0 if not known
	unmarked bool   // MarkIteration does nothing
}

// NewGMLake builds the engine over d.
func NewGMLake(d stitch.Driver, opts ...stitch.Option) (*GMLake, error) {
	eng, err := stitch.New(d, opts...)
	if err != nil {
		return nil, fmt.Errorf("gmlake: %w", err)
	}
	return &GMLake{eng: eng}, nil
}

// Name implements Allocator.
func (g *GMLake) Name() string {
	if g.unmarked {
		return NameGMLakeUnmarked
	}
	return NameGMLake
}

// MarkIteration implements IterationMarker: it passes the mark on to the engine
// (stitch.Engine.MarkIteration), unless the adapter is the unmarked variant.
func (g *GMLake) MarkIteration() {
	if !g.unmarked {
		g.eng.MarkIteration()
	}
}

// Alloc implements Allocator. A request larger than the capacity (stitch.ErrTooLarge) is reported as
// out-of-memory too, which is what it is under the capacity being tested.
func (g *GMLake) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
	p, err := g.eng.Alloc(size, s)
	if err != nil {
		return 0, g.failed(size, err)
	}
	return p, nil
}

// failed is err, the engine's refusal of a request of size bytes, as the benchmark's
// OutOfMemoryError where the engine ran out of capacity. It is kept out of Alloc, whose frame
// a served request then keeps small.
//
//go:noinline
func (g *GMLake) failed(size uint64, err error) error {
	if errors.Is(err, stitch.ErrTooLarge) {
		st := g.eng.Stats()
		return fmt.Errorf("%w: %w", &OutOfMemoryError{Allocator: g.Name(), Requested: size,
			Reserved: st.ReservedBytes, Capacity: g.capacity}, err)
	}
	return err
}

// Free implements Allocator.
func (g *GMLake) Free(ptr uintptr, size uint64) error { return g.eng.Free(ptr, size) }

// Reserved implements Allocator.
func (g *GMLake) Reserved() uint64 { return g.eng.Reserved() }

// DriverCalls implements Allocator.
func (g *GMLake) DriverCalls() uint64 { return g.eng.Stats().DriverCalls.Total() }

// Check implements Checker.
func (g *GMLake) Check() error { return g.eng.Check() }

// Engine is the engine under the adapter, for figures the Allocator interface does not carry.
func (g *GMLake) Engine() *stitch.Engine { return g.eng }

// Close implements Allocator.
func (g *GMLake) Close() error { return g.eng.Close() }

// CallsByKind implements CallCounter.
func (g *GMLake) CallsByKind() map[string]uint64 {
	calls := g.eng.Stats().DriverCalls
	out := make(map[string]uint64, stitch.NumCallKinds)
	for k := range stitch.NumCallKinds {
		out[k.String()] = calls.Of(k)
	}
	return out
}
