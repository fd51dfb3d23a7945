package stitch_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// TestUnmarkedConvergesOnMultiscaleCNN: two iterations of one shape with another between them share
// every context but those of their first requests; a context remembers more than its last place
// (contextPlaces), so each finds its own. The ResNet-18 and ResNet-50 traces of results/cnn (recorded
// on an H200, a new image size each step, shapes recurring after different ones) repeated four
// times in a row, unmarked, make no driver call in their fourth repetition (with one place per
// context: 54 and 320 calls), with handles sized to the headroom and with handles of one chunk (as
// the engine makes them near its capacity, where the older places matter: with the larger handles
// of an uncapped run one place per context settles too).
func TestUnmarkedConvergesOnMultiscaleCNN(t *testing.T) {
	for _, name := range []string{"resnet18-multiscale-h200.trace.gz", "resnet50-multiscale-h200.trace.gz"} {
		t.Run(name, func(t *testing.T) {
			tr, err := trace.ReadFile(filepath.Join("..", "results", "cnn", name))
			require.NoError(t, err)
			forHandleSizes(t, func(t *testing.T, opts ...stitch.Option) { assertQuietFrom(t, tr, 4, 4, false, opts...) })
		})
	}
}
