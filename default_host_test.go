package gmlake

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/driver/host"
)

// gpuUsable reports whether the default driver here is the CUDA one.
func gpuUsable(t *testing.T) bool {
	t.Helper()
	d, err := cuda.New()
	if err != nil {
		return false
	}
	require.NoError(t, d.Close())
	return true
}

func TestDefaultDriverIsHost(t *testing.T) {
	if gpuUsable(t) {
		t.Skip("a GPU is usable here: the default driver is CUDA's (TestDefaultDriverCUDA)")
	}
	a, err := NewAllocator()
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	assert.IsType(t, &host.Driver{}, a.Driver())
	assert.Equal(t, uint64(host.DefaultGranularity), a.Granularity())
}

func TestDefaultDriverRejectsBadGranularity(t *testing.T) {
	_, err := NewAllocator(WithGranularity(1000))
	if gpuUsable(t) {
		assert.ErrorIs(t, err, cuda.ErrGranularity)
	} else {
		assert.ErrorIs(t, err, host.ErrBadOption)
	}
}
