package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
)

// TestCapacityIsWhatTheMachineCanBack: a driver asked for far more than the machine has reports
// what the machine holds, and refuses (typed, nothing created) what it cannot back, without ever
// touching the memory.
func TestCapacityIsWhatTheMachineCanBack(t *testing.T) {
	d := newTestDriver(t, WithCapacity(1<<50))
	b, err := machineBacking()
	require.NoError(t, err)
	free, total, err := d.MemInfo()
	require.NoError(t, err)
	assert.LessOrEqual(t, total, b.total, "total is what the machine holds, not the 1 PiB asked for")
	assert.LessOrEqual(t, free, b.total)
	_, err = d.Create(free + 64*g) // more than the machine can back now
	require.ErrorIs(t, err, stitch.ErrOutOfMemory)
	assert.Contains(t, err.Error(), "the machine can back")
	size, _ := fileUsage(t, d)
	assert.Zero(t, size, "the refused Create left the memfd alone")
	h, err := d.Create(g)
	require.NoError(t, err, "still usable")
	require.NoError(t, d.Release(h))
}

// TestRoomFollowsBacking: with the machine's backing given, Create and MemInfo hand out no more
// than it can back, counting what was handed out and not touched yet.
func TestRoomFollowsBacking(t *testing.T) {
	d := newTestDriver(t, WithCapacity(100*g))
	avail := uint64(6 * g)
	d.backing = func() (backing, error) { return backing{total: 50 * g, available: avail}, nil }
	free, total, err := d.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(50*g), total, "the machine holds less than the capacity")
	assert.Equal(t, uint64(6*g), free)

	_, err = d.Create(7 * g)
	require.ErrorIs(t, err, stitch.ErrOutOfMemory)
	h, err := d.Create(4 * g)
	require.NoError(t, err)
	free, _, err = d.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(2*g), free, "4 granules handed out, not backed yet")
	_, err = d.Create(3 * g)
	require.ErrorIs(t, err, stitch.ErrOutOfMemory)

	// Touched, the region is backed: the kernel counts it (less available), the driver no longer.
	addr := mapped(t, d, h, 4*g)
	fill(bytesAt(addr, 4*g), 1)
	avail = 2 * g
	free, _, err = d.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(2*g), free)
	h2, err := d.Create(2 * g)
	require.NoError(t, err)
	require.NoError(t, d.Release(h2))
}

func TestMeminfoField(t *testing.T) {
	mem := []byte("MemTotal:       24683652 kB\nMemFree:          100 kB\nMemAvailable:   23959472 kB\nHugePages_Total:       0\n")
	assert.Equal(t, uint64(24683652)<<10, meminfoField(mem, "MemTotal:"))
	assert.Equal(t, uint64(23959472)<<10, meminfoField(mem, "MemAvailable:"))
	assert.Zero(t, meminfoField(mem, "HugePages_Total:"))
	assert.Zero(t, meminfoField(mem, "Missing:"))
}

func TestReadLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	used := write("memory.current", "1000\n")
	lim, ok := readLimit(write("memory.max", "4096\n"), used)
	require.True(t, ok)
	assert.Equal(t, cgroupLimit{max: 4096, used: 1000}, lim)
	_, ok = readLimit(write("v2-unlimited", "max\n"), used)
	assert.False(t, ok, "v2 without a limit")
	_, ok = readLimit(write("v1-unlimited", "9223372036854771712\n"), used)
	assert.False(t, ok, "v1 without a limit")
	_, ok = readLimit(filepath.Join(dir, "absent"), used)
	assert.False(t, ok)
}
