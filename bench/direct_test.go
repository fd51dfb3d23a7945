package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDirectOneDeviceCallPerRequest(t *testing.T) {
	d := NewDirect(NewSimDevice(WithDeviceCapacity(4 * KiB)))
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

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		bad  bool
	}{
		{in: "40GiB", want: 40 << 30}, {in: "40 GiB", want: 40 << 30}, {in: "1.5g", want: 3 << 29},
		{in: "512MiB", want: 512 << 20}, {in: "2MB", want: 2_000_000}, {in: "4096", want: 4096},
		{in: "12 parsecs", bad: true}, {in: "-1GiB", bad: true}, {in: "", bad: true},
	}
	for _, tc := range tests {
		got, err := ParseBytes(tc.in)
		if tc.bad {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}
