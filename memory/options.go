package memory

import (
	"log/slog"

	"github.com/gmlake/gmlake/stitch"
)

// Option configures an Allocator.
type Option func(*config)

type config struct {
	engineOptions []stitch.Option
	logger        *slog.Logger
}

// WithEngineOptions passes options to stitch.New (thresholds, capacity, stitch budget).
func WithEngineOptions(opts ...stitch.Option) Option {
	return func(c *config) { c.engineOptions = append(c.engineOptions, opts...) }
}

// WithLogger sets the logger of the Allocator and of its engine. Default: none.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}
