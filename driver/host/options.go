package host

import (
	"log/slog"
	"time"
)

// DefaultGranularity is the unit of physical allocation and mapping unless WithGranularity says
// otherwise: 2 MiB, as on CUDA, so that engine behaviour on the host matches the GPU.
const DefaultGranularity = 2 << 20

// Option configures a Driver.
type Option func(*config)

type config struct {
	granularity  uint64
	capacity     uint64 // 0: the machine's physical RAM
	strictAccess bool
	manualEvents bool
	eventLatency time.Duration
	logger       *slog.Logger
}

func defaultConfig() config {
	return config{granularity: DefaultGranularity, logger: slog.New(slog.DiscardHandler)}
}

// WithGranularity sets the unit of physical allocation and mapping. It must be a power of two and a
// multiple of the system page size (64 KiB keeps tests small).
func WithGranularity(bytes uint64) Option {
	return func(c *config) { c.granularity = bytes }
}

// WithCapacity limits the physical memory the driver hands out; Create beyond it fails with an
// error wrapping stitch.ErrOutOfMemory. 0 (the default) means the machine's physical RAM.
// The capacity is rounded down to a multiple of the granularity.
func WithCapacity(bytes uint64) Option {
	return func(c *config) { c.capacity = bytes }
}

// WithStrictAccess maps memory inaccessible (PROT_NONE) until SetAccess is called on it, as CUDA
// does, so that a caller who forgets SetAccess faults on the host too. Without it, Map makes memory
// readable and writable at once.
func WithStrictAccess() Option {
	return func(c *config) { c.strictAccess = true }
}

// WithLogger sets the logger for driver calls (debug level) and failures (warn level). Default: none.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithManualEvents makes the driver stand for a device whose streams run behind the host: an event
// completes only when CompleteEvent (or Synchronize) says so, so that tests can hold a stream's
// work in flight for as long as they like.
func WithManualEvents() Option {
	return func(c *config) { c.manualEvents = true }
}

// WithEventLatency makes every event complete only once latency has passed since it was recorded;
// Synchronize waits for the newest one.
func WithEventLatency(latency time.Duration) Option {
	return func(c *config) { c.eventLatency = latency }
}
