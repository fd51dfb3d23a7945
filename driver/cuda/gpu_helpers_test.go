package cuda_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/cuda"
)

// requireGPUEnv, set to 1, makes a missing GPU a test failure instead of a skip (scripts/gpu-run.sh
// sets it, so that a GPU machine on which the driver cannot be used does not pass silently).
const requireGPUEnv = "GMLAKE_REQUIRE_GPU"

// newDriverB is newDriver for benchmarks.
func newDriverB(b *testing.B, opts ...cuda.Option) *cuda.Driver {
	b.Helper()
	d, err := cuda.New(opts...)
	if errors.Is(err, cuda.ErrUnavailable) && os.Getenv(requireGPUEnv) != "1" {
		b.Skip(err)
	}
	require.NoError(b, err)
	b.Cleanup(func() { assert.NoError(b, d.Close()) })
	return d
}

// newDriver opens device 0, or skips the test where this machine has no usable GPU.
func newDriver(t *testing.T, opts ...cuda.Option) *cuda.Driver {
	t.Helper()
	d, err := cuda.New(opts...)
	if errors.Is(err, cuda.ErrUnavailable) && os.Getenv(requireGPUEnv) != "1" {
		t.Skip(err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return d
}

// pattern returns n bytes that differ per seed and per offset, so misplaced data cannot match.
func pattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	return b
}

// readBack copies n bytes from the device.
func readBack(t *testing.T, d interface{ CopyFromDevice([]byte, uintptr) error }, addr uintptr, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	require.NoError(t, d.CopyFromDevice(b, addr))
	return b
}

// sameBytes compares want and got byte by byte and reports only the first difference: whole-buffer assert.Equal on gigabytes would print megabytes on failure.
func sameBytes(t *testing.T, want, got []byte, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	if bytes.Equal(want, got) {
		return
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("%s: first difference at byte %d of %d: want %#x got %#x", what, i, len(want), want[i], got[i])
			return
		}
	}
}
