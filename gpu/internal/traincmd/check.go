package traincmd

import (
	"fmt"
	"slices"

	"github.com/gmlake/gmlake/gpu/pool"
)

// CheckRun checks a training command's arguments before any device work: every allocator is one
// pool.New runs (pool.Names, spelled as there), and steps leaves at least one steady step after
// the warm-up steps (one per shape).
func CheckRun(allocators []string, steps, warmup int) error {
	for _, a := range allocators {
		if !slices.Contains(pool.Names, a) {
			return fmt.Errorf("%w %q (known: %v)", pool.ErrUnknown, a, pool.Names)
		}
	}
	if steps <= warmup {
		return fmt.Errorf("--steps %d leaves no steady state after %d warm-up steps", steps, warmup)
	}
	return nil
}
