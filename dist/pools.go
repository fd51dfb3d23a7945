package dist

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/gmlake/gmlake/memory"
	"github.com/gmlake/gmlake/stitch"
)

// ErrNoDevices is returned by NewPools for a device count below one.
var ErrNoDevices = errors.New("dist: need at least one device")

// ErrNoSuchDevice is returned for a device ordinal outside [0, Len).
var ErrNoSuchDevice = errors.New("dist: no such device")

// DriverFactory makes the driver of device ordinal. NewPools takes ownership of what it returns.
type DriverFactory func(ordinal int) (stitch.Driver, error)

// Pools is one gmlake allocator per device, indexed by device ordinal. The set is fixed at
// construction; each Allocator is safe for concurrent use, and so are Pools' methods other than
// Close.
type Pools struct {
	pools []*memory.Allocator
	log   *slog.Logger
}

// NewPools makes devices allocators, the i-th over factory(i). On any failure it closes what it had
// made and returns an error naming the device.
func NewPools(devices int, factory DriverFactory, opts ...Option) (*Pools, error) {
	if devices < 1 {
		return nil, fmt.Errorf("%w (asked for %d)", ErrNoDevices, devices)
	}
	if factory == nil {
		return nil, errors.New("dist: nil driver factory")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	p := &Pools{pools: make([]*memory.Allocator, 0, devices), log: cfg.logger}
	for i := range devices {
		a, err := newPool(i, factory, cfg)
		if err != nil {
			return nil, errors.Join(err, p.Close())
		}
		p.pools = append(p.pools, a)
	}
	p.log.Debug("dist: pools ready", "devices", devices)
	return p, nil
}

func newPool(ordinal int, factory DriverFactory, cfg config) (*memory.Allocator, error) {
	d, err := factory(ordinal)
	if err != nil {
		return nil, fmt.Errorf("dist: driver of device %d: %w", ordinal, err)
	}
	if d == nil {
		return nil, fmt.Errorf("dist: driver factory returned nil for device %d", ordinal)
	}
	opts := []memory.Option{memory.WithLogger(cfg.logger.With("device", ordinal))}
	if eo := cfg.engineOptions(ordinal); len(eo) > 0 {
		opts = append(opts, memory.WithEngineOptions(eo...))
	}
	a, err := memory.NewAllocator(d, opts...)
	if err != nil {
		return nil, fmt.Errorf("dist: pool of device %d: %w", ordinal, err)
	}
	return a, nil
}

// Len is the number of devices.
func (p *Pools) Len() int { return len(p.pools) }

// Device is the allocator of device ordinal, or an error wrapping ErrNoSuchDevice.
func (p *Pools) Device(ordinal int) (*memory.Allocator, error) {
	if ordinal < 0 || ordinal >= len(p.pools) {
		return nil, fmt.Errorf("%w: %d (have %d)", ErrNoSuchDevice, ordinal, len(p.pools))
	}
	return p.pools[ordinal], nil
}

// Stats are the allocators' statistics, indexed by device ordinal.
func (p *Pools) Stats() []memory.Stats {
	out := make([]memory.Stats, len(p.pools))
	for i, a := range p.pools {
		out[i] = a.Stats()
	}
	return out
}

// Check checks every device's engine and joins what it finds, each error naming its device.
func (p *Pools) Check() error {
	var errs []error
	for i, a := range p.pools {
		if err := a.Check(); err != nil {
			errs = append(errs, fmt.Errorf("device %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// EmptyCache gives every device's unused physical memory back to its driver.
func (p *Pools) EmptyCache() error {
	var errs []error
	for i, a := range p.pools {
		if err := a.EmptyCache(); err != nil {
			errs = append(errs, fmt.Errorf("device %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// Close closes every allocator (and its driver), joining their errors.
func (p *Pools) Close() error {
	var errs []error
	for i, a := range p.pools {
		if err := a.Close(); err != nil {
			errs = append(errs, fmt.Errorf("device %d: %w", i, err))
		}
	}
	p.pools = nil
	return errors.Join(errs...)
}
