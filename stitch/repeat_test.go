package stitch_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// TestUnmarkedConvergesOnMultiscaleCNN: never marked, the engine finds where iterations begin
// (iterfinder.go) and follows memos from there. The ResNet-18 and ResNet-50 traces of results/cnn
// (recorded on an H200, a new image size each step, shapes recurring after different ones)
// repeated four times in a row make no driver call in their fourth repetition, with handles sized
// to the headroom and with handles of one chunk (as the engine makes them near its capacity).
func TestUnmarkedConvergesOnMultiscaleCNN(t *testing.T) {
	for _, name := range []string{"resnet18-multiscale-h200.trace.gz", "resnet50-multiscale-h200.trace.gz"} {
		t.Run(name, func(t *testing.T) {
			tr, err := trace.ReadFile(filepath.Join("..", "results", "cnn", name))
			require.NoError(t, err)
			forHandleSizes(t, func(t *testing.T, opts ...stitch.Option) { assertQuietFrom(t, tr, 4, 4, false, opts...) })
		})
	}
}
