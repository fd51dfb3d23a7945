package gmlake

import (
	"errors"
	"log/slog"

	"github.com/gmlake/gmlake/memory"
	"github.com/gmlake/gmlake/stitch"
)

// ErrBadOption: options that contradict each other (WithGranularity configures the default
// driver, so it cannot be combined with WithDriver).
var ErrBadOption = errors.New("gmlake: bad option")

// Option configures NewAllocator and NewTensorEngine.
type Option func(*config)

type config struct {
	driver      stitch.Driver
	granularity uint64
	jobSize     uint64
	hostMemory  bool
	engine      []stitch.Option
	logger      *slog.Logger
}

// WithDriver allocates from d instead of the default driver. The allocator takes ownership of d and
// closes it on Close when it is an io.Closer.
func WithDriver(d stitch.Driver) Option {
	return func(c *config) { c.driver = d }
}

// WithGranularity sets the default driver's unit of physical memory (2 MiB unless set; the host
// driver accepts any power of two that is a multiple of the page size). Not with WithDriver.
func WithGranularity(bytes uint64) Option {
	return func(c *config) { c.granularity = bytes }
}

// WithHostMemory makes the default driver the host driver even on a machine with a GPU: memory
// the CPU computes on (train/vm, NewTensorEngine, which implies it). A driver given to WithDriver is
// used as it is.
func WithHostMemory() Option {
	return func(c *config) { c.hostMemory = true }
}

// WithJobSize scales the allocator to a job whose live memory peaks near bytes: the default host
// driver's granularity becomes a sixteenth of it (a power of two, at least the page size, at most
// the 2 MiB default), the small threshold an eighth of the granularity (at least 512 bytes, at
// most the 256 KiB default), so that a small page, one chunk, holds at least eight blocks, and the
// first iteration grows only what its requests ask (WithExactGrowth). Without it
// a job of a few tens of kilobytes reserves a whole 2 MiB page (see TestSmallJob for the figures). WithGranularity and WithSmallThreshold, when also given, win; CUDA memory keeps
// the device's granularity.
func WithJobSize(bytes uint64) Option {
	return func(c *config) { c.jobSize = bytes }
}

// WithSmallThreshold sets the size below which requests come from the small-block pool and are
// never stitched.
func WithSmallThreshold(bytes uint64) Option {
	return func(c *config) { c.engine = append(c.engine, stitch.WithSmallThreshold(bytes)) }
}

// WithSmallPageSize sets the size of the pages small blocks are carved from, rounded up to the
// granularity (default: eight times the small threshold, rounded up).
func WithSmallPageSize(bytes uint64) Option {
	return func(c *config) { c.engine = append(c.engine, stitch.WithSmallPageSize(bytes)) }
}

// WithMinStitch sets the smallest free block considered for stitching (GLake's fragLimit).
func WithMinStitch(bytes uint64) Option {
	return func(c *config) { c.engine = append(c.engine, stitch.WithMinStitch(bytes)) }
}

// WithCapacity limits the physical memory the allocator takes from the driver; 0 means whatever the
// driver has.
func WithCapacity(bytes uint64) Option {
	return func(c *config) { c.engine = append(c.engine, stitch.WithCapacity(bytes)) }
}

// WithStitchBudget bounds the stitched blocks kept (count and virtual bytes); beyond it the least
// recently used lose their virtual range (their physical memory stays cached).
func WithStitchBudget(maxBlocks int, maxVirtualBytes uint64) Option {
	return func(c *config) { c.engine = append(c.engine, stitch.WithStitchBudget(maxBlocks, maxVirtualBytes)) }
}

// WithGrowthSlack lets a growth create headroom beyond the request, at most fraction (in [0, 1)) of
// the memory reserved: fewer, larger driver calls when an iteration needs more than any before it.
// Default 0 (see stitch.WithGrowthSlack for the measurements).
func WithGrowthSlack(fraction float64) Option {
	return func(c *config) { c.engine = append(c.engine, stitch.WithGrowthSlack(fraction)) }
}

// WithWarmupGrowth makes every growth create at least bytes until the engine has remembered an
// iteration: fewer map calls per stitched view. Off by default (see stitch.WithWarmupGrowth).
func WithWarmupGrowth(bytes uint64) Option {
	return func(c *config) { c.engine = append(c.engine, stitch.WithWarmupGrowth(bytes)) }
}

// WithExactGrowth makes the first iteration (the first marked one; never marked, the first once
// frees show the training loop) grow only what its requests ask; by default,
// far from the capacity, each of its growths creates at least 1/128 of the room below it (but no
// more than the memory held): fewer and larger growths (see stitch.WithExactGrowth). WithJobSize
// implies it.
func WithExactGrowth() Option {
	return func(c *config) { c.engine = append(c.engine, stitch.WithExactGrowth()) }
}

// WithHandleSize sets the size of the physical allocations the engine creates, a multiple of the
// granularity. Default: the granularity (see stitch.WithHandleSize for what larger ones cost in
// memory).
func WithHandleSize(bytes uint64) Option {
	return func(c *config) { c.engine = append(c.engine, stitch.WithHandleSize(bytes)) }
}

// WithLogger logs through l (the allocator and the engine; the default driver logs nothing). Default:
// no logging.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// memoryOptions are the Allocator's options over a driver of the given granularity.
func (c *config) memoryOptions(granularity uint64) []memory.Option {
	engine := c.engine
	if c.jobSize > 0 {
		// First, so that an explicit WithSmallThreshold overrides it.
		// A job that states its size is built as its requests ask (WithExactGrowth): the first
		// iteration's bytes ahead are sized to the device, not to the job.
		threshold := min(max(granularity/8, 512), stitch.DefaultSmallThreshold)
		engine = append([]stitch.Option{stitch.WithSmallThreshold(threshold), stitch.WithExactGrowth()}, engine...)
	}
	return []memory.Option{memory.WithLogger(c.logger), memory.WithEngineOptions(engine...)}
}
