package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
)

// Spec names an allocator and makes fresh instances of it for a given capacity in bytes (0 = no
// limit). Each replay gets a new instance, so runs do not share state.
type Spec struct {
	Name string
	New  func(capacity uint64) (baseline.Allocator, error)
}

// AllocatorNames lists the simulated allocators of a default report, in report order.
var AllocatorNames = []string{baseline.NameGMLake, baseline.NameGorgonia, baseline.NameCaching, baseline.NameDirect}

// unboundedArena is the Gorgonia arena used when no capacity is set: big enough for any trace, and
// harmless, since the simulated device hands out addresses, not memory.
const unboundedArena = 1 << 50

// SimSpec returns the named allocator (one of baseline.Names) on a simulated device whose memory is
// the capacity, its driver calls metered at the H200's costs.
func SimSpec(name string) (Spec, error) {
	if !slices.Contains(baseline.Names, name) {
		return Spec{}, fmt.Errorf("%w %q (have %s)", baseline.ErrUnknown, name, strings.Join(baseline.Names, ", "))
	}
	return Spec{Name: name, New: func(capacity uint64) (baseline.Allocator, error) { return newSim(name, capacity) }}, nil
}

// newSim makes the named allocator on a simulated device of capacity bytes (unlimited when 0), with
// the ledger of its device or driver calls; engine options are added to gmlake's.
func newSim(name string, capacity uint64, engine ...stitch.Option) (baseline.Allocator, error) {
	cfg := baseline.Config{Capacity: capacity, Engine: engine}
	var ledger *DriverLedger
	switch name {
	case baseline.NameGMLake, baseline.NameGMLakeUnmarked:
		var drvOpts []sim.Option
		if capacity == 0 {
			capacity = H200Memory
		}
		drvOpts = append(drvOpts, sim.WithCapacity(capacity))
		drv := newMeteredDriver(sim.New(drvOpts...), H200)
		cfg.Driver, ledger = drv, drv.ledger
	default:
		var devOpts []baseline.SimDeviceOption
		if name == baseline.NameGorgonia && capacity == 0 {
			cfg.Capacity = unboundedArena
		}
		if name == baseline.NameDirect {
			devOpts = append(devOpts, baseline.WithDeviceCapacity(capacity))
		}
		dev := newMeteredDevice(baseline.NewSimDevice(devOpts...), H200)
		cfg.Device, ledger = dev, dev.ledger
	}
	a, err := baseline.New(name, cfg)
	if err != nil {
		return nil, err
	}
	return metered(a, ledger), nil
}

// SimSpecs resolves a list of names with SimSpec.
func SimSpecs(names []string) ([]Spec, error) {
	specs := make([]Spec, 0, len(names))
	for _, n := range names {
		s, err := SimSpec(strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	return specs, nil
}

// SlackSpec returns gmlake or gmlake-unmarked with stitch.WithGrowthSlack(fraction), named
// "NAME/slack=FRACTION", to replay beside the default engine.
func SlackSpec(name string, fraction float64) (Spec, error) {
	if name != baseline.NameGMLake && name != baseline.NameGMLakeUnmarked {
		return Spec{}, fmt.Errorf("%w %q: growth slack applies to gmlake and gmlake-unmarked", baseline.ErrUnknown, name)
	}
	if !(fraction >= 0 && fraction < 1) {
		return Spec{}, fmt.Errorf("%w: growth slack %v not in [0, 1)", stitch.ErrBadOption, fraction)
	}
	return Spec{
		Name: fmt.Sprintf("%s/slack=%g", name, fraction),
		New: func(capacity uint64) (baseline.Allocator, error) {
			return newSim(name, capacity, stitch.WithGrowthSlack(fraction))
		},
	}, nil
}

// WarmupSpec returns gmlake with stitch.WithWarmupGrowth(bytes), named "gmlake/warmup=NMiB", to
// replay beside the default engine.
func WarmupSpec(bytes uint64) Spec {
	return Spec{
		Name: fmt.Sprintf("gmlake/warmup=%dMiB", bytes/units.MiB),
		New: func(capacity uint64) (baseline.Allocator, error) {
			return newSim(baseline.NameGMLake, capacity, stitch.WithWarmupGrowth(bytes))
		},
	}
}

// HandleSizeSpec returns gmlake with stitch.WithHandleSize(bytes), handles of one fixed size
// instead of sized to the headroom, named "gmlake/handle=NMiB", to replay beside the default engine.
func HandleSizeSpec(bytes uint64) Spec {
	return Spec{
		Name: fmt.Sprintf("gmlake/handle=%dMiB", bytes/units.MiB),
		New: func(capacity uint64) (baseline.Allocator, error) {
			return newSim(baseline.NameGMLake, capacity, stitch.WithHandleSize(bytes))
		},
	}
}
