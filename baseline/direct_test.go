package baseline

import (
	"testing"

	"github.com/gmlake/gmlake/internal/units"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDirectOneDeviceCallPerRequest(t *testing.T) {
	d := NewDirect(NewSimDevice(WithDeviceCapacity(4 * units.KiB)))
	p, err := d.Alloc(1000, 0)
	require.NoError(t, err)
	q, err := d.Alloc(3000, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(1024+3072), d.Reserved(), "sizes round to 512, as cudaMalloc's")
	_, err = d.Alloc(1, 0)
	assert.ErrorIs(t, err, ErrOutOfMemory)
	require.NoError(t, d.Free(p, 1000))
	assert.ErrorIs(t, d.Free(p, 1000), ErrUnknownPointer)
	assert.ErrorIs(t, d.Free(q, 1), ErrSizeMismatch)
	require.NoError(t, d.Close())
	assert.Equal(t, uint64(0), d.Reserved())
	assert.Equal(t, uint64(5), d.DriverCalls(), "3 mallocs (one failed) and 2 frees")
}
