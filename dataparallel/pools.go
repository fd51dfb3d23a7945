package dataparallel

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/gmlake/gmlake/stitch"
)

// ErrNoDevices is returned by NewPools for a device count below one.
var ErrNoDevices = errors.New("dataparallel: need at least one device")

// ErrNoSuchDevice is returned for a device ordinal outside [0, Len).
var ErrNoSuchDevice = errors.New("dataparallel: no such device")

// DriverFactory makes the driver of device ordinal. NewPools takes ownership of what it returns.
type DriverFactory func(ordinal int) (stitch.Driver, error)

// Pools is one gmlake engine per device, indexed by device ordinal, each over its own driver. The
// set is fixed at construction; each engine is safe for concurrent use, and so are Pools' methods
// other than Close.
type Pools struct {
	pools   []*stitch.Engine
	drivers []stitch.Driver
	log     *slog.Logger
}

// NewPools makes devices engines, the i-th over factory(i). On any failure it closes what it had
// made and returns an error naming the device.
func NewPools(devices int, factory DriverFactory, opts ...Option) (*Pools, error) {
	if devices < 1 {
		return nil, fmt.Errorf("%w (asked for %d)", ErrNoDevices, devices)
	}
	if factory == nil {
		return nil, errors.New("dataparallel: nil driver factory")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	p := &Pools{log: cfg.logger}
	for i := range devices {
		e, d, err := newPool(i, factory, cfg)
		if err != nil {
			return nil, errors.Join(err, p.Close())
		}
		p.pools, p.drivers = append(p.pools, e), append(p.drivers, d)
	}
	p.log.Debug("dataparallel: pools ready", "devices", devices)
	return p, nil
}

func newPool(ordinal int, factory DriverFactory, cfg config) (*stitch.Engine, stitch.Driver, error) {
	d, err := factory(ordinal)
	if err != nil {
		return nil, nil, fmt.Errorf("dataparallel: driver of device %d: %w", ordinal, err)
	}
	if d == nil {
		return nil, nil, fmt.Errorf("dataparallel: driver factory returned nil for device %d", ordinal)
	}
	opts := append([]stitch.Option{stitch.WithLogger(cfg.logger.With("device", ordinal))}, cfg.engineOptions(ordinal)...)
	e, err := stitch.New(d, opts...)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("dataparallel: engine of device %d: %w", ordinal, err), closeDriver(d))
	}
	return e, d, nil
}

// closeDriver closes d when it is an io.Closer (driver/cuda and driver/host are).
func closeDriver(d stitch.Driver) error {
	if c, ok := d.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Len is the number of devices.
func (p *Pools) Len() int { return len(p.pools) }

// Device is the engine of device ordinal, or an error wrapping ErrNoSuchDevice.
func (p *Pools) Device(ordinal int) (*stitch.Engine, error) {
	if ordinal < 0 || ordinal >= len(p.pools) {
		return nil, fmt.Errorf("%w: %d (have %d)", ErrNoSuchDevice, ordinal, len(p.pools))
	}
	return p.pools[ordinal], nil
}

// Driver is the driver under device ordinal's engine, or an error wrapping ErrNoSuchDevice; copies
// and streams (driver/cuda) are the driver's business, not the engine's.
func (p *Pools) Driver(ordinal int) (stitch.Driver, error) {
	if ordinal < 0 || ordinal >= len(p.drivers) {
		return nil, fmt.Errorf("%w: %d (have %d)", ErrNoSuchDevice, ordinal, len(p.drivers))
	}
	return p.drivers[ordinal], nil
}

// Stats are the engines' statistics, indexed by device ordinal.
func (p *Pools) Stats() []stitch.Stats {
	out := make([]stitch.Stats, len(p.pools))
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

// Close closes every engine, then its driver when it is an io.Closer, joining their errors.
func (p *Pools) Close() error {
	var errs []error
	for i, e := range p.pools {
		if err := errors.Join(e.Close(), closeDriver(p.drivers[i])); err != nil {
			errs = append(errs, fmt.Errorf("device %d: %w", i, err))
		}
	}
	p.pools, p.drivers = nil, nil
	return errors.Join(errs...)
}
