package reliability

import (
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// Engine bugs this suite found, each with the smallest test that shows it. While a bug is present
// its test skips with the bug's description (GMLAKE_STRICT=1 makes it fail instead), so that CI
// stays green while the engine is fixed; once fixed the test passes and guards the fix.
const (
	bugDestroyEvent = "a failed DestroyEvent is dropped: the engine forgets the event (stitch.Engine.dropEvent sets " +
		"b.event = 0 after logging), so the driver holds it forever; it should be kept and retried (as orphans are) at " +
		"EmptyCache/Close"
	bugCloseArenaFree = "a failed Free of the arena's virtual range in Close is returned but never retried: Close marks " +
		"the engine closed, so the range leaks for good (a second Close says ErrClosed); it should be kept as an " +
		"orphan that a second Close gives back (fixed in 3460a3c..64fb4dd: this test guards it)"
)

// Found by the soak (soak_test.go), on the traces whose repeated segment spans iterations of
// different sequence lengths; the figures of each run are in its log line.
const (
	bugSoakDriverCalls = "no steady state right after warm-up: with the segment repeated identically the engine " +
		"still stitches new views (Reserve, Maps, SetAccess) in later iterations until the layout of free memory " +
		"converges (opt1.3b-lora-ckpt at e00f60a: last driver call near iteration 700 of 1000)"
	bugSoakReservedGrows = "reserved bytes still change after warm-up (by a few chunks)"
)

// policyIssue logs a known shortfall of the engine's policy (not a correctness bug) and counts it;
// under GMLAKE_STRICT=1 it fails the test.
func policyIssue(t *testing.T, issue, format string, args ...any) {
	t.Helper()
	tally.known.Add(1)
	msg := fmt.Sprintf(format, args...)
	if strict() {
		t.Errorf("%s: %s", msg, issue)
		return
	}
	t.Logf("known engine issue: %s: %s", msg, issue)
}

// knownBug skips t with bug's description, or fails it under GMLAKE_STRICT=1.
func knownBug(t *testing.T, bug string, present bool) {
	t.Helper()
	if !present {
		return
	}
	tally.known.Add(1)
	if strict() {
		t.Fatalf("known engine bug: %s", bug)
	}
	t.Skipf("known engine bug: %s", bug)
}

// TestDestroyEventFailureLeaksNoEvent: two streams, a block freed on stream 1 records an event;
// the first DestroyEvent after that fails, wherever the engine makes it (on reuse, on flush, in
// EmptyCache or in Close). After Close (twice if the first reports the fault) the driver must hold
// no event.
func TestDestroyEventFailureLeaksNoEvent(t *testing.T) {
	h, err := NewHarness(Config{Capacity: 64 * simG})
	require.NoError(t, err)
	setup := []Op{
		{Kind: OpAlloc, ID: 1, Size: simG, Stream: 0}, // the first stream is the engine's hot one
		{Kind: OpAlloc, ID: 2, Size: simG, Stream: 1}, // a second stream: frees record events
		{Kind: OpFree, ID: 2},
	}
	for _, op := range setup {
		require.NoError(t, h.Apply(op))
	}
	require.Equal(t, 1, h.Driver.Live().Events, "the free recorded an event")
	destroyed := h.Driver.Calls()[stitch.CallDestroyEvent]
	h.Driver.FailNth(stitch.CallDestroyEvent, 1, nil)
	rest := []Op{
		{Kind: OpAlloc, ID: 3, Size: simG, Stream: 1}, // exact reuse on its stream
		{Kind: OpFree, ID: 3},
		{Kind: OpAlloc, ID: 4, Size: 2 * simG, Stream: 0}, // flushes the cached block
		{Kind: OpFree, ID: 4},
		{Kind: OpFree, ID: 1},
		{Kind: OpEmptyCache},
	}
	for _, op := range rest {
		if err := h.Apply(op); err != nil {
			require.ErrorIs(t, err, sim.ErrInjected, "%s", op)
		}
		require.NoError(t, h.Verify(), "%s", op)
	}
	if err := h.Close(); err != nil {
		require.ErrorIs(t, err, sim.ErrInjected)
		if err := h.Engine.Close(); err != nil {
			require.ErrorIs(t, err, stitch.ErrClosed)
		}
	}
	require.Greater(t, h.Driver.Calls()[stitch.CallDestroyEvent], destroyed, "the fault was met")
	knownBug(t, bugDestroyEvent, h.Leaks() != nil)
	require.NoError(t, h.Leaks())
}

// TestCloseRetriesArenaFree: the Free of the arena's range, the last driver call of Close, fails
// once. Close reports it, and a second Close gives back what the first could not.
func TestCloseRetriesArenaFree(t *testing.T) {
	h, err := NewHarness(Config{Capacity: 64 * simG})
	require.NoError(t, err)
	require.NoError(t, h.Apply(Op{Kind: OpAlloc, ID: 1, Size: 3 * simG}))
	h.Driver.FailNth(stitch.CallFree, 1, nil)
	require.ErrorIs(t, h.Engine.Close(), sim.ErrInjected)
	second := h.Engine.Close()
	knownBug(t, bugCloseArenaFree, (second != nil && !errors.Is(second, stitch.ErrClosed)) || h.Leaks() != nil)
	require.NoError(t, h.Leaks())
}

// Two faults in one request (a failure, then the failure of its rollback) leave an orphan: a range
// the engine could not unmap. The orphan's mappings are not known to the rest of the engine:
const (
	bugOrphanView = "after a stitch fails (Map or SetAccess) and its rollback Unmap fails too, the orphaned view " +
		"range still maps the chunks, but the chunks' view counts do not say so: EmptyCache and Close release those " +
		"physical allocations before retrying the orphan, the driver refuses (still mapped), and Close leaks the handles"
	bugOrphanArenaSlot = "after createRun's SetAccess fails and its rollback Unmap fails too, the orphan still maps " +
		"the arena slots, but grow hands the same slots out again: the next request that grows maps over the orphan " +
		"and fails with the driver's overlap error (not an out-of-memory error) until an EmptyCache retries the orphan"
)

// TestDoubleFaults replays minimized programs (see RunProgram) found by TestSimulation with
// MultiFault on: each ends with a violation or a leak while its bug is present.
func TestDoubleFaults(t *testing.T) {
	tests := []struct {
		name, program, bug string
	}{
		// Seed 1, minimized: a 36 MiB stitch meets SetAccess #8 failing, and the rollback's Unmap fails.
		{"stitch-set-access-then-unmap", "52617b5cd255d09b924eb3a708e966295c41d3af4dad8c90de01c63181bc19ba6a5aa391e79bbf20cc06c2d38b2e", bugOrphanView},
		// Seed 2, minimized: the first page's SetAccess fails, its rollback Unmap fails, the next small request maps over it.
		{"grow-set-access-then-unmap", "14ec4175fc4e2433a4612381da", bugOrphanArenaSlot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := hex.DecodeString(tt.program)
			require.NoError(t, err)
			_, err = RunProgram(prog, ProgramOptions{MultiFault: true})
			if err != nil {
				t.Logf("%v", err)
			}
			knownBug(t, tt.bug, err != nil)
		})
	}
}
