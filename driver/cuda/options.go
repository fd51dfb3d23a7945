package cuda

import "log/slog"

// Option configures New.
type Option func(*config)

type config struct {
	ordinal       int
	granularity   uint64 // 0: the device's recommended granularity
	library       string // "" : $GMLAKE_LIBCUDA, else libcuda.so.1
	syncUnmap     bool
	maxIdleEvents int
	logger        *slog.Logger
}

func defaultConfig() config {
	return config{syncUnmap: true, maxIdleEvents: 256, logger: slog.New(slog.DiscardHandler)}
}

// WithDevice selects the device by ordinal (default 0).
func WithDevice(ordinal int) Option { return func(c *config) { c.ordinal = ordinal } }

// WithGranularity sets the unit of physical allocation and mapping. It must be a power of two
// and a multiple of the device's minimum granularity (2 MiB on an H200). Default: the device's
// recommended granularity.
func WithGranularity(bytes uint64) Option { return func(c *config) { c.granularity = bytes } }

// WithLibrary sets the path of the driver library to dlopen (default $GMLAKE_LIBCUDA, else
// libcuda.so.1). The library is loaded once per process: a later New naming another path fails
// with ErrLibraryLoaded.
func WithLibrary(path string) Option { return func(c *config) { c.library = path } }

// WithUnmapSync says whether Unmap first waits for all work queued in the context (default true).
// cuMemUnmap does not wait for kernels that still read or write the range; unmapping under them
// is a use-after-free on the device. Turn it off only when the caller synchronizes itself.
func WithUnmapSync(on bool) Option { return func(c *config) { c.syncUnmap = on } }

// WithLogger logs driver setup and failures (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }
