package host

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gmlake/gmlake/stitch"
)

// failMmap makes the next calls of mmap whose flags match want fail with ENOMEM, as the kernel
// does at the mapping limit, n times; it is undone at the end of the test.
func failMmap(t *testing.T, want func(prot, flags int) bool, n int) *int {
	t.Helper()
	real := mmap
	t.Cleanup(func() { mmap = real })
	failed := new(int)
	mmap = func(addr uintptr, size uint64, prot, flags, fd int, offset uint64) (uintptr, error) {
		if *failed < n && want(prot, flags) {
			*failed++
			return 0, unix.ENOMEM
		}
		return real(addr, size, prot, flags, fd, offset)
	}
	return failed
}

func sharedMaps(_, flags int) bool   { return flags&unix.MAP_SHARED != 0 }
func reservations(_, flags int) bool { return flags&unix.MAP_ANONYMOUS != 0 }

// TestMappingLimitIsTyped: a Map, a Reserve and an Unmap the kernel refuses with ENOMEM return
// ErrMappingLimit (an out-of-memory error) and change nothing; the driver stays usable.
func TestMappingLimitIsTyped(t *testing.T) {
	d := newTestDriver(t)
	h, err := d.Create(2 * g)
	require.NoError(t, err)
	r, err := d.Reserve(2 * g)
	require.NoError(t, err)

	failMmap(t, sharedMaps, 1)
	err = d.Map(r, g, h, 0)
	require.ErrorIs(t, err, ErrMappingLimit)
	require.ErrorIs(t, err, stitch.ErrOutOfMemory)
	assert.Empty(t, d.ranges[r].mappings, "the refused map is not recorded")
	assert.Zero(t, d.regions[h].mappings)
	require.NoError(t, d.Map(r, g, h, 0), "usable once the kernel has room")

	failMmap(t, reservations, 1)
	_, err = d.Reserve(g)
	require.ErrorIs(t, err, ErrMappingLimit)
	require.ErrorIs(t, err, stitch.ErrOutOfMemory)
	assert.Len(t, d.ranges, 1)

	require.NoError(t, d.Unmap(r, g))
	require.NoError(t, d.Free(r, 2*g))
	require.NoError(t, d.Release(h))
}

// TestUnmapAtMappingLimit: at the limit the kernel refuses even the mmap that would re-reserve an
// unmapped range; Unmap then unmaps first (which needs no new mapping) and reserves the hole
// again, so it succeeds, the range stays reserved (it faults) and can be mapped again.
func TestUnmapAtMappingLimit(t *testing.T) {
	d := newTestDriver(t)
	h, err := d.Create(g)
	require.NoError(t, err)
	r, err := d.Reserve(3 * g)
	require.NoError(t, err)
	require.NoError(t, d.Map(r+g, g, h, 0))
	fill(bytesAt(r+g, g), 4)

	failed := failMmap(t, func(_, flags int) bool { return flags&unix.MAP_FIXED != 0 }, 1)
	require.NoError(t, d.Unmap(r+g, g))
	assert.Equal(t, 1, *failed, "the first re-reservation was refused")
	assert.True(t, faults(r+g, false), "the range is reserved again, mapped to nothing")
	require.NoError(t, d.Map(r+g, g, h, 0))
	assert.Equal(t, pattern(g, 4), bytesAt(r+g, g))
	require.NoError(t, d.Unmap(r+g, g))
	require.NoError(t, d.Free(r, 3*g))
}

// TestEngineAtMappingLimit: a stitch that meets the mapping limit, its rollback's re-reservation
// refused too, fails with an out-of-memory error and leaves nothing behind (no orphan holding
// mappings): the same request succeeds once the kernel has room, and smaller ones meanwhile.
func TestEngineAtMappingLimit(t *testing.T) {
	d := newTestDriver(t, WithCapacity(16*g))
	e, err := stitch.New(d, stitch.WithSmallThreshold(g), stitch.WithMinStitch(g))
	require.NoError(t, err)
	var ps []uintptr
	for range 16 {
		p, err := e.Alloc(g, 0)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	for i := 0; i < 16; i += 2 {
		require.NoError(t, e.Free(ps[i], g))
	}
	before := e.Stats()
	// The fourth piece's map fails, then the rollback's re-reservation: four ENOMEMs in a row
	// from the fourth shared map on.
	maps := 0
	real := mmap
	t.Cleanup(func() { mmap = real })
	mmap = func(addr uintptr, size uint64, prot, flags, fd int, offset uint64) (uintptr, error) {
		if flags&unix.MAP_SHARED != 0 {
			maps++
		}
		if maps >= 4 && maps < 100 && flags&unix.MAP_FIXED != 0 && flags&unix.MAP_FIXED_NOREPLACE == 0 {
			return 0, unix.ENOMEM
		}
		return real(addr, size, prot, flags, fd, offset)
	}
	_, err = e.Alloc(8*g, 0)
	require.ErrorIs(t, err, stitch.ErrOutOfMemory)
	require.NoError(t, e.Check())
	after := e.Stats()
	assert.Equal(t, before.VirtualBytes, after.VirtualBytes, "the half-built view is gone, no orphan")
	assert.Equal(t, before.ReservedBytes, after.ReservedBytes)
	small, err := e.Alloc(g, 0)
	require.NoError(t, err, "a one-piece request needs no new mapping")
	require.NoError(t, e.Free(small, g))

	maps = 100 // room again
	p, err := e.Alloc(8*g, 0)
	require.NoError(t, err)
	fill(bytesAt(p, 8*g), 9)
	assert.Equal(t, pattern(8*g, 9), bytesAt(p, 8*g))
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
}

// TestRealMappingLimit fills the process's mapping count (vm.max_map_count) for real, with one
// page-sized region mapped at every other page of a reservation, until the kernel refuses: the
// refusal is ErrMappingLimit, and once mappings are unmapped, mapping works again. Most of the
// count is taken by plain mprotect splits first, so the driver itself makes few calls at the limit.
func TestRealMappingLimit(t *testing.T) {
	raw, err := os.ReadFile("/proc/sys/vm/max_map_count")
	require.NoError(t, err)
	limit, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	if limit > 1<<20 {
		t.Skipf("vm.max_map_count is %d: too many mappings to reach in a test", limit)
	}
	page := uint64(unix.Getpagesize())
	d := newTestDriver(t, WithGranularity(page))
	h, err := d.Create(page)
	require.NoError(t, err)
	const room = 64 // mappings the driver makes at the limit
	r, err := d.Reserve(2 * room * page)
	require.NoError(t, err)

	// Take the count close to the limit: every mprotect of a page inside a PROT_NONE reservation
	// splits it (two more mappings).
	filler, err := reserve(2*uint64(limit)*page, page)
	require.NoError(t, err)
	defer func() { require.NoError(t, munmap(filler, 2*uint64(limit)*page)) }()
	count := func() int {
		maps, err := os.ReadFile("/proc/self/maps")
		require.NoError(t, err)
		return strings.Count(string(maps), "\n")
	}
	for i, n := uint64(0), count(); n < limit-room; i, n = i+1, n+2 {
		require.NoError(t, mprotect(filler+uintptr(2*i+1)*uintptr(page), page, unix.PROT_READ))
	}
	var mapped []uintptr
	var limitErr error
	for i := range uint64(room) {
		at := r + uintptr(2*i*page)
		if err := d.Map(at, page, h, 0); err != nil {
			limitErr = err
			break
		}
		mapped = append(mapped, at)
	}
	require.Error(t, limitErr, "the kernel's limit was reached")
	require.True(t, errors.Is(limitErr, ErrMappingLimit) && errors.Is(limitErr, stitch.ErrOutOfMemory), "%v", limitErr)
	for _, at := range mapped {
		require.NoError(t, d.Unmap(at, page), "unmapping at the limit")
	}
	require.NoError(t, d.Map(r, page, h, 0), "mapping works again")
	require.NoError(t, d.Unmap(r, page))
	require.NoError(t, d.Free(r, 2*room*page))
}

// TestArenaReservationFailureIsTyped: an engine whose arena the kernel will not reserve fails to
// start with an out-of-memory error and leaves nothing behind; the next try starts.
func TestArenaReservationFailureIsTyped(t *testing.T) {
	d := newTestDriver(t, WithCapacity(16*g))
	failMmap(t, reservations, 1)
	_, err := stitch.New(d)
	require.ErrorIs(t, err, stitch.ErrOutOfMemory)
	require.ErrorIs(t, err, ErrMappingLimit)
	assert.Empty(t, d.ranges)
	e, err := stitch.New(d)
	require.NoError(t, err)
	require.NoError(t, e.Close())
}
