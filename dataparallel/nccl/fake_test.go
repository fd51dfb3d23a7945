package nccl

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeLibrary compiles testdata/fakenccl.c (NCCL's API over host memory, ranks in one process)
// and opens it as NCCL and as the source of the driver's context calls, so the binding's argument passing, groups and
// errors are tested without GPUs. It skips where no C compiler is found.
func fakeLibrary(t *testing.T) *Library {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake NCCL: %v", cc, err)
	}
	so := filepath.Join(t.TempDir(), "libfakenccl.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-Wall", "-o", so, "testdata/fakenccl.c", "-lpthread").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Setenv(EnvVar, so)
	l, err := open(config{logger: discard(), contextsFromNCCL: true})
	require.NoError(t, err)
	return l
}

// hostFloats is n float32s of memory outside the Go heap (the fake keeps pointers across calls,
// as NCCL keeps device pointers), with its address.
func hostFloats(t *testing.T, vals ...float32) ([]float32, uintptr) {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, 4*len(vals)+4, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, syscall.Munmap(b)) })
	f := unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(vals))
	copy(f, vals)
	return f, uintptr(unsafe.Pointer(&b[0]))
}

func TestFakeCollectivesInGroups(t *testing.T) {
	l := fakeLibrary(t)
	v, err := l.Version()
	require.NoError(t, err)
	assert.Equal(t, 21899, v, "the fake answered")

	comms, err := l.InitAll([]int{4, 5, 6})
	require.NoError(t, err)
	defer func() {
		for _, c := range comms {
			assert.NoError(t, c.Destroy())
		}
	}()
	for i, c := range comms {
		assert.Equal(t, i, c.Rank())
		assert.Equal(t, 3, c.Count())
		assert.Equal(t, 4+i, c.Device())
	}
	// Rank r sends r+1, 10(r+1), ... : sums are 6, 60, 600, ...
	var send, recv [3]uintptr
	var recvs [3][]float32
	for r := range 3 {
		x := float32(r + 1)
		_, send[r] = hostFloats(t, x, 10*x, 100*x, 1000*x, 1e4*x, 1e5*x)
		recvs[r], recv[r] = hostFloats(t, 0, 0, 0, 0, 0, 0)
	}
	group := func(call func(r int, c *Comm) error) {
		require.NoError(t, l.Group(func() error {
			for r, c := range comms {
				if err := call(r, c); err != nil {
					return err
				}
			}
			return nil
		}))
	}

	group(func(r int, c *Comm) error { return c.AllReduce(send[r], recv[r], 6, Float32, Sum, 0) })
	for r := range 3 {
		assert.Equal(t, []float32{6, 60, 600, 6000, 6e4, 6e5}, recvs[r], "all-reduce sum, rank %d", r)
	}
	group(func(r int, c *Comm) error { return c.AllReduce(send[r], recv[r], 4, Float32, Max, 0) })
	assert.Equal(t, []float32{3, 30, 300, 3000, 6e4, 6e5}, recvs[1], "max over 4 elements; the rest untouched")

	var shards [3][]float32
	var shard [3]uintptr
	for r := range 3 {
		shards[r], shard[r] = hostFloats(t, 0, 0)
	}
	group(func(r int, c *Comm) error { return c.ReduceScatter(send[r], shard[r], 2, Float32, Sum, 0) })
	assert.Equal(t, [3][]float32{{6, 60}, {600, 6000}, {6e4, 6e5}}, shards, "block r of the sum to rank r")

	for r := range 3 {
		clear(recvs[r])
		copy(recvs[r][2*r:], shards[r]) // in place: each rank's block already sits at its offset
	}
	group(func(r int, c *Comm) error { return c.AllGather(recv[r]+uintptr(8*r), recv[r], 2, Float32, 0) })
	for r := range 3 {
		assert.Equal(t, []float32{6, 60, 600, 6000, 6e4, 6e5}, recvs[r], "in-place all-gather, rank %d", r)
	}
}

func TestFakeErrors(t *testing.T) {
	l := fakeLibrary(t)
	comms, err := l.InitAll([]int{0})
	require.NoError(t, err)
	_, buf := hostFloats(t, 1, 2)
	err = comms[0].AllReduce(buf, buf, 2, Float64, Sum, 0)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	assert.ErrorIs(t, err, ErrNCCL)
	assert.ErrorContains(t, err, "ncclAllReduce")
	assert.ErrorContains(t, err, "fake: invalid argument", "NCCL's own message is kept")
	assert.ErrorIs(t, l.GroupEnd(), ErrInvalidUsage, "a group end without a start")
	_, err = l.InitAll(nil)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, err = l.InitRank(0, 2, UniqueID{}, 2)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	require.NoError(t, comms[0].Destroy())
	assert.ErrorIs(t, comms[0].ReduceScatter(buf, buf, 1, Float32, Sum, 0), ErrClosed)
	assert.ErrorIs(t, comms[0].AsyncError(), ErrClosed)
}

// TestFakeInitRankFromGoroutines: one id, one goroutine per rank joining on its own "context"
// (the fake reports the context as the device), then collectives outside groups, each rank on its
// own goroutine, as separate processes would issue them.
func TestFakeInitRankFromGoroutines(t *testing.T) {
	l := fakeLibrary(t)
	id, err := l.UniqueID()
	require.NoError(t, err)
	const world = 4
	comms := make([]*Comm, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comms[r], errs[r] = l.InitRank(uintptr(20+r), world, id, r)
		}()
	}
	wg.Wait()
	for r := range world {
		require.NoError(t, errs[r], "rank %d", r)
		assert.Equal(t, 20+r, comms[r].Device(), "rank %d joined with its context current", r)
		assert.Equal(t, r, comms[r].Rank())
	}
	bufs := make([][]float32, world)
	addrs := make([]uintptr, world)
	for r := range world {
		bufs[r], addrs[r] = hostFloats(t, float32(r), 1)
	}
	for r := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = comms[r].AllReduce(addrs[r], addrs[r], 2, Float32, Sum, 0)
		}()
	}
	wg.Wait()
	for r := range world {
		require.NoError(t, errs[r])
		assert.Equal(t, []float32{0 + 1 + 2 + 3, world}, bufs[r], "rank %d", r)
		assert.NoError(t, comms[r].AsyncError())
		assert.NoError(t, comms[r].Destroy())
	}
}
