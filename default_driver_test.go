package gmlake

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/driver/host"
)

// The default driver of a cuda build is the CUDA driver where a GPU is usable and the host driver
// elsewhere; both honour the granularity asked for.
func TestDefaultDriverCUDA(t *testing.T) {
	probe, gpuErr := cuda.New()
	if gpuErr == nil {
		require.NoError(t, probe.Close())
	}
	d, err := defaultDriver(0, 0)
	require.NoError(t, err)
	defer func() {
		if c, ok := d.(io.Closer); ok {
			assert.NoError(t, c.Close())
		}
	}()
	if gpuErr != nil {
		require.NotEqual(t, "1", os.Getenv("GMLAKE_REQUIRE_GPU"), "a GPU was required: %v", gpuErr)
		assert.IsType(t, &host.Driver{}, d, "no GPU (%v): host fallback", gpuErr)
	} else {
		assert.IsType(t, &cuda.Driver{}, d)
	}

	g := 2 * d.Granularity()
	d2, err := defaultDriver(g, g)
	require.NoError(t, err)
	assert.Equal(t, g, d2.Granularity())
	if c, ok := d2.(io.Closer); ok {
		assert.NoError(t, c.Close())
	}
}
