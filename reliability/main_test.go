package reliability

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// tally counts what the suites did, for the one summary line `make reliability` prints.
var tally struct {
	faults     atomic.Uint64 // injected faults that fired
	ops        atomic.Uint64 // operations followed by a full verification (Check, accounting, shadow)
	shadowed   atomic.Uint64 // operations whose bytes the shadow map checked (soak, concurrency)
	leaks      atomic.Uint64 // runs that ended with driver objects still held
	violations atomic.Uint64 // broken invariants: Check, accounting, shadow map, stream guard, patterns
}

func TestMain(m *testing.M) {
	code := m.Run()
	fmt.Printf("reliability: faults=%d ops=%d shadowed=%d leaks=%d violations=%d\n",
		tally.faults.Load(), tally.ops.Load(), tally.shadowed.Load(), tally.leaks.Load(), tally.violations.Load())
	os.Exit(code)
}

// envInt is the integer in environment variable name, or def.
func envInt(t testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "%s=%q", name, s)
	return n
}

// long reports whether the long versions of the suites were asked for (GMLAKE_LONG=1).
func long() bool { return os.Getenv("GMLAKE_LONG") != "" }
