package baseline

import (
	"fmt"
	"strings"

	"github.com/gmlake/gmlake/stitch"
)

// The names of the allocators, as commands take them (--allocators) and reports print them.
const (
	NameGMLake         = "gmlake"          // the stitching engine, told where iterations begin
	NameGMLakeUnmarked = "gmlake-unmarked" // the same engine without the marks, to see what they do
	NameGorgonia       = "gorgonia"        // FirstFit: Gorgonia's pool algorithm over one arena
	NameCaching        = "caching"         // Caching: PyTorch's caching allocator
	NameDirect         = "direct"          // Direct: one device allocation per request
)

// Names lists every allocator New makes, in report order.
var Names = []string{NameGMLake, NameGMLakeUnmarked, NameGorgonia, NameCaching, NameDirect}

// Config is what New builds an allocator from; each allocator reads the fields it needs.
type Config struct {
	// Capacity is the most memory the allocator may hold, in bytes; 0: no limit of its own. It is
	// the arena's size for gorgonia (required there), the engine's stitch.WithCapacity for gmlake,
	// the reserve limit for caching; direct leaves limits to its Device.
	Capacity uint64
	// Device is the memory of gorgonia, caching and direct.
	Device Device
	// Driver is the engine's driver for gmlake and gmlake-unmarked; Engine options are added to
	// stitch.WithCapacity(Capacity).
	Driver stitch.Driver
	Engine []stitch.Option
}

// New returns a fresh allocator of the given name (one of Names). An unknown name, or a Config
// without the Device or Driver the allocator needs, is an error wrapping ErrUnknown or
// ErrMissingMemory.
func New(name string, c Config) (Allocator, error) {
	switch name {
	case NameGMLake, NameGMLakeUnmarked:
		if c.Driver == nil {
			return nil, fmt.Errorf("%s: %w: no driver", name, ErrMissingMemory)
		}
		g, err := NewGMLake(c.Driver, append([]stitch.Option{stitch.WithCapacity(c.Capacity)}, c.Engine...)...)
		if err != nil {
			return nil, err
		}
		g.capacity, g.unmarked = c.Capacity, name == NameGMLakeUnmarked
		return g, nil
	case NameGorgonia, NameCaching, NameDirect:
		if c.Device == nil {
			return nil, fmt.Errorf("%s: %w: no device", name, ErrMissingMemory)
		}
	default:
		return nil, fmt.Errorf("%w %q (have %s)", ErrUnknown, name, strings.Join(Names, ", "))
	}
	switch name {
	case NameGorgonia:
		return NewFirstFit(c.Device, c.Capacity)
	case NameCaching:
		return NewCaching(c.Device, WithLimit(c.Capacity)), nil
	}
	return NewDirect(c.Device), nil
}
