package stitch

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// EmptyCache waits for the device, then releases every cached stitched range and every physical
// allocation that no live block uses.
func (e *Engine) EmptyCache() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	return e.emptyCache()
}

// Reset frees every live block, then releases memory as EmptyCache does.
func (e *Engine) Reset() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	e.freeAll()
	return e.emptyCache()
}

func (e *Engine) freeAll() {
	var live []*block
	for _, b := range e.blocks.All() {
		if b.live {
			live = append(live, b)
		}
	}
	slices.SortFunc(live, func(a, b *block) int { return cmp.Compare(a.ptr, b.ptr) })
	for _, b := range live {
		e.cache(b)
	}
}

// Close gives every driver object back. Blocks still live become invalid. Every later call fails
// with ErrClosed, except Close itself while something could not be given back: it tries again.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		if len(e.orphans) == 0 {
			return ErrClosed
		}
		if err := e.retryOrphans(); err != nil {
			return fmt.Errorf("stitch: %d driver objects still cannot be given back: %w", len(e.orphans), err)
		}
		return nil
	}
	var errs []error
	e.freeAll()
	err := e.emptyCache()
	if err != nil && e.synchronize() == nil {
		// The wait for the device (or a release) failed: once more, before memory is given back
		// while the device may still use it.
		err = e.emptyCache()
	}
	if err != nil {
		errs = append(errs, err)
	}
	// Whatever is still held (after a failure above, or cached blocks waiting for events) goes now;
	// what the driver refuses is kept as an orphan for the next Close.
	closeErrs, orphanErr := e.blockCache.close()
	errs = append(errs, closeErrs...)
	e.closed = true
	e.live, e.liveBlocks = 0, 0
	if len(e.orphans) > 0 {
		errs = append(errs, fmt.Errorf("stitch: %d driver objects could not be given back; Close again to retry: %w", len(e.orphans), orphanErr))
	}
	return errors.Join(errs...)
}
