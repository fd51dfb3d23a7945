package dataparallel

import (
	"log/slog"

	"github.com/gmlake/gmlake/stitch"
)

// Option configures Pools.
type Option func(*config)

type config struct {
	common    []stitch.Option
	perDevice func(ordinal int) []stitch.Option
	logger    *slog.Logger
}

func defaultConfig() config { return config{logger: slog.New(slog.DiscardHandler)} }

func (c config) engineOptions(ordinal int) []stitch.Option {
	opts := append([]stitch.Option(nil), c.common...)
	if c.perDevice != nil {
		opts = append(opts, c.perDevice(ordinal)...)
	}
	return opts
}

// WithEngineOptions passes options to every device's stitch engine (thresholds, capacity, budget).
func WithEngineOptions(opts ...stitch.Option) Option {
	return func(c *config) { c.common = append(c.common, opts...) }
}

// WithDeviceEngineOptions passes options to one device's engine, after the common ones, e.g. a
// per-device capacity when devices differ.
func WithDeviceEngineOptions(f func(ordinal int) []stitch.Option) Option {
	return func(c *config) { c.perDevice = f }
}

// WithLogger sets the logger of the pools and of every engine (with a "device" attribute).
// Default: none.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}
