package baseline

import (
	"testing"

	"github.com/gmlake/gmlake/internal/units"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSimDevice(t *testing.T) {
	d := NewSimDevice(WithDeviceCapacity(8*units.KiB), WithDeviceAlignment(1024))
	a, err := d.Malloc(1)
	require.NoError(t, err)
	b, err := d.Malloc(5000)
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.Equal(t, uint64(1024+5120), d.Used(), "rounded to the alignment")
	_, err = d.Malloc(3 * units.KiB)
	assert.ErrorIs(t, err, ErrOutOfMemory)
	require.NoError(t, d.Free(a))
	assert.ErrorIs(t, d.Free(a), ErrUnknownPointer)
	c, err := d.Malloc(1)
	require.NoError(t, err)
	assert.NotEqual(t, a, c, "addresses are never reused")
	assert.Equal(t, uint64(1024+5120), d.Peak())
	assert.Equal(t, uint64(6), d.Calls(), "every call counts, failed ones too")
}
