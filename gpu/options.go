package gpu

import (
	"io"
	"log/slog"

	"github.com/gmlake/gmlake/stitch"
)

// Allocator hands out device memory; *stitch.Engine (over driver/cuda) is one. Alloc is given the
// Device's stream, on which all of the Device's work is queued.
type Allocator interface {
	Alloc(size uint64, s stitch.Stream) (uintptr, error)
	Free(ptr uintptr, size uint64) error
}

// Option configures a Device.
type Option func(*config)

type config struct {
	ordinal int
	alloc   Allocator
	logger  *slog.Logger
}

func defaultConfig() config {
	return config{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// WithDevice picks the GPU by ordinal (default 0).
func WithDevice(ordinal int) Option { return func(c *config) { c.ordinal = ordinal } }

// WithAllocator makes every tensor's memory come from a (default: cuMemAlloc/cuMemFree per tensor,
// the "direct" baseline).
func WithAllocator(a Allocator) Option { return func(c *config) { c.alloc = a } }

// WithLogger logs kernel compilation and module loading (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }
