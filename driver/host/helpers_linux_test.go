package host

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// testGranularity keeps tests small: 64 KiB, a multiple of every common page size.
const testGranularity = 64 << 10

func newTestDriver(t *testing.T, opts ...Option) *Driver {
	t.Helper()
	d, err := New(append([]Option{WithGranularity(testGranularity)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		if !d.closed {
			require.NoError(t, d.Close())
		}
	})
	return d
}

// bytesAt views n bytes of mapped memory at addr. The memory lies outside the Go heap, so the
// garbage collector never looks at it.
func bytesAt(addr uintptr, n uint64) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), n)
}

// fill writes a pattern derived from seed and each byte's index.
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}

// pattern returns what fill(b, seed) writes into a buffer of n bytes.
func pattern(n uint64, seed byte) []byte {
	b := make([]byte, n)
	fill(b, seed)
	return b
}

// fileUsage reports the memfd's size and the bytes the kernel actually holds for it.
func fileUsage(t *testing.T, d *Driver) (size, allocated uint64) {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(d.fd, &st))
	return uint64(st.Size), uint64(st.Blocks) * 512
}

// readSink keeps the read in faults from being optimised away.
var readSink byte

// faults reports whether touching addr faults (SIGSEGV turned into a panic by SetPanicOnFault).
func faults(addr uintptr, write bool) (faulted bool) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if recover() != nil {
			faulted = true
		}
	}()
	b := bytesAt(addr, 1)
	if write {
		b[0] = 1
	} else {
		readSink = b[0]
	}
	return false
}

// memfdName is the name under which d's memfd appears in /proc/self/maps.
func memfdName(t *testing.T, d *Driver) string {
	t.Helper()
	name, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", d.fd))
	require.NoError(t, err)
	return strings.TrimSuffix(name, " (deleted)")
}

// mappingsOf counts the lines of /proc/self/maps that map the memfd called name.
func mappingsOf(t *testing.T, name string) int {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	n := 0
	for line := range strings.Lines(string(maps)) {
		line = strings.TrimSpace(line)
		if strings.HasSuffix(line, " "+name) || strings.HasSuffix(line, " "+name+" (deleted)") {
			n++
		}
	}
	return n
}
