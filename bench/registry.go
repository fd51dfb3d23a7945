package bench

import (
	"fmt"
	"strings"

	"github.com/gmlake/gmlake/stitch"
)

// Spec names an allocator and makes fresh instances of it for a given capacity in bytes (0 = no
// limit). Each replay gets a new instance, so runs do not share state.
type Spec struct {
	Name string
	New  func(capacity uint64) (Allocator, error)
}

// AllocatorNames lists the simulated allocators, in report order.
var AllocatorNames = []string{"gmlake", "gorgonia", "caching", "direct"}

// unboundedArena is the Gorgonia arena used when no capacity is set: big enough for any trace, and
// harmless, since the simulated device hands out addresses, not memory.
const unboundedArena = 1 << 50

// SimSpec returns the named allocator on a simulated device whose memory is the capacity.
func SimSpec(name string) (Spec, error) {
	var newAlloc func(capacity uint64) (Allocator, error)
	switch name {
	case "gmlake":
		newAlloc = func(capacity uint64) (Allocator, error) { return newSimGMLake(capacity, true) }
	case "gmlake-unmarked": // gmlake not told where iterations begin, to see what the marks do
		newAlloc = func(capacity uint64) (Allocator, error) { return newSimGMLake(capacity, false) }
	case "gorgonia":
		newAlloc = func(capacity uint64) (Allocator, error) {
			if capacity == 0 {
				capacity = unboundedArena
			}
			return NewFirstFit(NewSimDevice(), capacity)
		}
	case "caching":
		newAlloc = func(capacity uint64) (Allocator, error) {
			return NewCaching(NewSimDevice(), WithLimit(capacity)), nil
		}
	case "direct":
		newAlloc = func(capacity uint64) (Allocator, error) {
			return NewDirect(NewSimDevice(WithDeviceCapacity(capacity))), nil
		}
	default:
		return Spec{}, fmt.Errorf("%w %q (have %s, gmlake-unmarked)", ErrUnknown, name, strings.Join(AllocatorNames, ", "))
	}
	return Spec{Name: name, New: newAlloc}, nil
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
	marked := name == "gmlake"
	if !marked && name != "gmlake-unmarked" {
		return Spec{}, fmt.Errorf("%w %q: growth slack applies to gmlake and gmlake-unmarked", ErrUnknown, name)
	}
	if !(fraction >= 0 && fraction < 1) {
		return Spec{}, fmt.Errorf("%w: growth slack %v not in [0, 1)", stitch.ErrBadOption, fraction)
	}
	return Spec{
		Name: fmt.Sprintf("%s/slack=%g", name, fraction),
		New: func(capacity uint64) (Allocator, error) {
			return newSimGMLake(capacity, marked, stitch.WithGrowthSlack(fraction))
		},
	}, nil
}

// WarmupSpec returns gmlake with stitch.WithWarmupGrowth(bytes), named "gmlake/warmup=NMiB", to
// replay beside the default engine.
func WarmupSpec(bytes uint64) Spec {
	return Spec{
		Name: fmt.Sprintf("gmlake/warmup=%dMiB", bytes/MiB),
		New: func(capacity uint64) (Allocator, error) {
			return newSimGMLake(capacity, true, stitch.WithWarmupGrowth(bytes))
		},
	}
}
