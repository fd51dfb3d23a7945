package stitch

import (
	"fmt"
	"log/slog"
)

// Option configures an Engine.
type Option func(*config) error

type config struct {
	smallThreshold uint64
	minStitch      uint64
	smallPage      uint64 // 0: eight times the small threshold, rounded up to Granularity
	maxViews       int
	maxViewBytes   uint64 // 0: 16 × arena size
	capacity       uint64 // 0: what the driver reports
	handleSize     uint64 // bytes of each physical allocation; 0: sized to the headroom (handleUnit)
	growthSlack    float64
	warmupGrowth   uint64 // 0: none; see WithWarmupGrowth
	exactGrowth    bool   // no bytes ahead in the first iteration (firstAhead); see WithExactGrowth
	logger         *slog.Logger
}

// WithSmallThreshold sets the size below which requests come from small pages (default 256 KiB,
// DefaultSmallThreshold; at most the page size).
func WithSmallThreshold(bytes uint64) Option {
	return func(c *config) error { c.smallThreshold = bytes; return nil }
}

// WithSmallPageSize sets the size of the pages small blocks are carved from, rounded up to
// Granularity. The default is eight times the small threshold (PyTorch's 2 MiB segments for the
// default threshold), rounded up to Granularity: with the defaults 2 MiB, and with an 8 KiB
// threshold over 64 KiB chunks one chunk, so that a tiny workload does not strand most of a 2 MiB
// page.
func WithSmallPageSize(bytes uint64) Option {
	return func(c *config) error { c.smallPage = bytes; return nil }
}

// WithMinStitch sets the smallest free range that may become a piece of a stitched block. Every
// piece but the first and the last of a stitched block is whole chunks, so only those two can be
// slivers; each costs at most one more chunk mapped, and on the shared traces excluding ranges
// below 64 KiB or 1 MiB cost up to 0.4% more memory, so the default is 0 (no limit).
func WithMinStitch(bytes uint64) Option {
	return func(c *config) error { c.minStitch = bytes; return nil }
}

// WithStitchBudget bounds the cached views: at most maxBlocks of them and maxVirtualBytes of virtual
// address space (0 keeps the default). Views beyond it are released least recently used first.
func WithStitchBudget(maxBlocks int, maxVirtualBytes uint64) Option {
	return func(c *config) error {
		if maxBlocks < 0 {
			return fmt.Errorf("%w: stitch budget of %d blocks", ErrBadOption, maxBlocks)
		}
		if maxBlocks > 0 {
			c.maxViews = maxBlocks
		}
		if maxVirtualBytes > 0 {
			c.maxViewBytes = maxVirtualBytes
		}
		return nil
	}
}

// WithCapacity limits the physical memory the engine creates (0: whatever the driver has).
func WithCapacity(bytes uint64) Option {
	return func(c *config) error { c.capacity = bytes; return nil }
}

// WithGrowthSlack lets a growth create headroom beyond what the request needs: as much as the
// current iteration has created so far (since the last MarkIteration; since New without marks), at
// most fraction × the memory reserved, never past the capacity. An iteration that needs more memory
// than any before it (a longer sequence) then grows in a few ever larger steps instead of one
// create, map and set-access, plus a stitch, per request. The default, 0, keeps reserved memory at
// what the peak needs: headroom trades memory for fewer driver calls (the gmlake/slack=0.005
// column of results/bench/RESULTS.md compares the two), and where it lands changes the layout of
// later iterations, so at larger fractions a long run can take longer to stop calling the driver.
func WithGrowthSlack(fraction float64) Option {
	return func(c *config) error {
		if !(fraction >= 0 && fraction < 1) {
			return fmt.Errorf("%w: growth slack %v not in [0, 1)", ErrBadOption, fraction)
		}
		c.growthSlack = fraction
		return nil
	}
}

// WithWarmupGrowth makes every growth create at least bytes (rounded up to whole chunks, never
// past the capacity) until the engine has remembered an iteration: during the setup and the first
// marked iteration, where memory is built up by hundreds of small growths (always, without marks).
// With handles larger than Granularity (WithHandleSize), fewer, larger growths make fewer, larger
// handles, and a stitched view maps each handle with its own Map call. The extra chunks are loose
// memory the next requests take, so reserved memory passes the need by less than bytes, and not at
// all under a capacity. Off by default: it changes where blocks land, and with it when a long run
// stops calling the driver (the gmlake/warmup=128MiB column of results/bench/RESULTS.md compares
// it with the default).
func WithWarmupGrowth(bytes uint64) Option {
	return func(c *config) error { c.warmupGrowth = bytes; return nil }
}

// WithHandleSize fixes the size of the physical allocations (handles) the engine creates, rounded
// up to Granularity; by default (0) a growth's handles are sized to the headroom the capacity
// leaves (tunables.go, handleHeadroomShare). Every VMM call costs per handle, so larger handles
// make creating memory and stitching it cheaper (a 1 GiB stitch costs 18 ms over 2 MiB handles and
// 0.5 ms over 64 MiB ones, measured on an H200); but a view maps handles only whole, so only the
// whole handles of a free range can join a view's middle, and free memory in the middle of a handle
// cannot be stitched. Fixed sizes trade memory for driver time (results/bench/HANDLES.md, at
// 0.4.7): llama1b-full needs 1.0022 x peak active with 2 MiB handles, 1.0120 with 16 MiB and 1.0165
// with 64 MiB. Granularity (2 MiB on CUDA) gives the fewest stranded bytes
// whatever the headroom.
func WithHandleSize(bytes uint64) Option {
	return func(c *config) error { c.handleSize = bytes; return nil }
}

// WithExactGrowth turns off the bytes ahead of the job's setup and first iteration (firstAhead,
// growth.go): until the engine has seen an iteration, marked or not, a growth creates what its
// request lacks and no more (with WithWarmupGrowth or WithGrowthSlack, what they add). By default,
// far from the capacity, a growth there creates at least 1/128 of the room below the capacity, but
// no more than the memory held, so that the job's memory is built in a few growths rather than
// one per request and stitches of what the loose memory cannot hold in one range; that memory is
// held from then on.
// With it the engine holds no more than the requests ask, at the driver time of the first
// iteration that tunables.go measures.
func WithExactGrowth() Option {
	return func(c *config) error { c.exactGrowth = true; return nil }
}

// WithLogger sets where the engine logs (nothing by default).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrBadOption)
		}
		c.logger = l
		return nil
	}
}
