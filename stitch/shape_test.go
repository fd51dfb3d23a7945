package stitch_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/trace"
)

// TestNewShapesLaidOutFromCoalescedMemory: on the traces gpu-train recorded with GPT-2-XL (dynamic
// padding: new shapes keep coming), the iterations of new shapes are laid out from flushed,
// coalesced memory when iterations are marked (shape.go), and the memory reserved stays closer to
// the live peak than when the same trace runs unmarked, where each new shape fills the holes
// between the cached blocks of the shapes before it (0.0088-0.0109 fragmentation before the rule).
func TestNewShapesLaidOutFromCoalescedMemory(t *testing.T) {
	for _, path := range []string{
		filepath.Join("testdata", "gpt2xl-lora-h200-gpu-train.trace.gz"),
		filepath.Join("..", "gpu", "results", "2026-11-29-40GiB", "traces", "gpt2-xl-gmlake.trace.gz"),
	} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, err := trace.ReadFile(path)
			require.NoError(t, err)
			frag := func(marks bool) float64 {
				res := replayMarked(t, tr, 0, 0, marks)
				require.NoError(t, res.oom)
				return 1 - float64(res.peakLive)/float64(res.peakReserved)
			}
			marked, unmarked := frag(true), frag(false)
			t.Logf("fragmentation marked %.4f, unmarked %.4f", marked, unmarked)
			assert.Less(t, marked, 0.007)
			assert.Less(t, marked, unmarked)
		})
	}
}
