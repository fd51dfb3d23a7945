package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gmlake/gmlake/internal/units"
)

// A report names every device its anchors were measured on and their coarsest bisection step; the
// shared anchors name neither (an H200, 256 MiB).
func TestAnchorSource(t *testing.T) {
	devices, step := AnchorSource([]Anchor{
		{Trace: "a", Device: "NVIDIA H100 80GB HBM3", Step: 2 * units.MiB},
		{Trace: "b", Device: "NVIDIA H100 80GB HBM3", Step: 2 * units.MiB},
	})
	assert.Equal(t, []string{"NVIDIA H100 80GB HBM3"}, devices)
	assert.Equal(t, 2*units.MiB, step)

	devices, step = AnchorSource([]Anchor{{Trace: "a", Device: "NVIDIA H100 80GB HBM3", Step: 2 * units.MiB}, {Trace: "b"}})
	assert.Equal(t, []string{"NVIDIA H100 80GB HBM3", "an H200"}, devices)
	assert.Equal(t, 256*units.MiB, step)

	devices, step = AnchorSource(nil)
	assert.Empty(t, devices)
	assert.Zero(t, step)
}
