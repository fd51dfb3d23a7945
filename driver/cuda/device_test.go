package cuda_test

import (
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/stitch"
)

// testDevice is what the engine-level tests need from a device: the driver, plus copies and fills.
type testDevice interface {
	stitch.Driver
	CopyToDevice(dst uintptr, src []byte) error
	CopyFromDevice(dst []byte, src uintptr) error
	MemsetAsync(dst uintptr, value byte, n uint64, s stitch.Stream) error
}

// onHostEnv, set to 1, runs the engine-level GPU tests on the host driver where no GPU is usable,
// to check the tests themselves on a development machine. Without it they skip.
const onHostEnv = "GMLAKE_CUDA_TESTS_ON_HOST"

// newTestDevice returns the CUDA driver, or the host driver under onHostEnv, or skips.
func newTestDevice(t *testing.T) testDevice {
	t.Helper()
	if os.Getenv(onHostEnv) == "1" {
		d, err := host.New(host.WithGranularity(2<<20), host.WithCapacity(4<<30))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		return hostDevice{d}
	}
	return newDriver(t)
}

// hostDevice gives the host driver the copy calls of the CUDA driver; its memory is process memory.
type hostDevice struct{ *host.Driver }

func hostBytes(addr uintptr, n int) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), n)
}

func (h hostDevice) CopyToDevice(dst uintptr, src []byte) error {
	copy(hostBytes(dst, len(src)), src)
	return nil
}

func (h hostDevice) CopyFromDevice(dst []byte, src uintptr) error {
	copy(dst, hostBytes(src, len(dst)))
	return nil
}

func (h hostDevice) MemsetAsync(dst uintptr, value byte, n uint64, _ stitch.Stream) error {
	b := hostBytes(dst, int(n))
	for i := range b {
		b[i] = value
	}
	return nil
}
