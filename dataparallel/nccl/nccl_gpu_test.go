package nccl_test

import (
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/dataparallel"
	"github.com/gmlake/gmlake/dataparallel/nccl"
	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/stitch"
)

// rank is one GPU of a test: its gmlake engine, its driver (copies, streams) and its stream.
type rank struct {
	engine *stitch.Engine
	driver *cuda.Driver
	stream stitch.Stream
}

// gpus opens n GPUs, each with a gmlake pool, or skips the test where there are fewer, or no NCCL.
func gpus(t *testing.T, n int) (*nccl.Library, []rank) {
	t.Helper()
	count, err := cuda.DeviceCount()
	if errors.Is(err, cuda.ErrUnavailable) || (err == nil && count < n) {
		t.Skipf("needs %d GPUs (have %d, %v)", n, count, err)
	}
	require.NoError(t, err)
	lib, err := nccl.Open()
	if errors.Is(err, nccl.ErrUnavailable) {
		t.Skip(err)
	}
	require.NoError(t, err)
	pools, err := dataparallel.NewPools(n, func(i int) (stitch.Driver, error) { return cuda.New(cuda.WithDevice(i)) })
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, pools.Close()) })
	ranks := make([]rank, n)
	for i := range ranks {
		e, err := pools.Device(i)
		require.NoError(t, err)
		d, err := pools.Driver(i)
		require.NoError(t, err)
		cd := d.(*cuda.Driver)
		s, err := cd.NewStream()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, cd.DestroyStream(s)) })
		ranks[i] = rank{engine: e, driver: cd, stream: s}
	}
	return lib, ranks
}

// upload puts v in a fresh gmlake block of r's device.
func (r rank) upload(t *testing.T, v []float32) uintptr {
	t.Helper()
	ptr, err := r.engine.Alloc(uint64(4*len(v)), r.stream)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.engine.Free(ptr, uint64(4*len(v)))) })
	require.NoError(t, r.driver.CopyToDevice(ptr, float32Bytes(v)))
	return ptr
}

func (r rank) download(t *testing.T, ptr uintptr, n int) []float32 {
	t.Helper()
	require.NoError(t, r.driver.SynchronizeStream(r.stream))
	b := make([]byte, 4*n)
	require.NoError(t, r.driver.CopyFromDevice(b, ptr))
	return bytesFloat32(b)
}

func float32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesFloat32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// rankData is rank r's input: small integers, so float32 sums are exact.
func rankData(r, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((r+1)*1000 + i%977)
	}
	return v
}

func TestGPUCollectivesOnGMLakeMemory(t *testing.T) {
	const n = 1<<20 + 3 // not a multiple of anything convenient
	lib, ranks := gpus(t, 2)
	devices := make([]int, len(ranks))
	for i, r := range ranks {
		devices[i] = r.driver.Ordinal()
	}
	comms, err := lib.InitAll(devices)
	require.NoError(t, err)
	defer func() {
		for _, c := range comms {
			assert.NoError(t, c.Destroy())
		}
	}()
	world := len(ranks)
	for i, c := range comms {
		assert.Equal(t, i, c.Rank())
		assert.Equal(t, world, c.Count())
		assert.Equal(t, devices[i], c.Device())
	}
	sum := make([]float32, n)
	send := make([]uintptr, world)
	for r := range ranks {
		for i, x := range rankData(r, n) {
			sum[i] += x
		}
		send[r] = ranks[r].upload(t, rankData(r, n))
	}

	t.Run("all-reduce", func(t *testing.T) {
		recv := make([]uintptr, world)
		for r := range ranks {
			recv[r] = ranks[r].upload(t, make([]float32, n))
		}
		require.NoError(t, lib.Group(func() error {
			for r, c := range comms {
				if err := c.AllReduce(send[r], recv[r], n, nccl.Float32, nccl.Sum, uintptr(ranks[r].stream)); err != nil {
					return err
				}
			}
			return nil
		}))
		for r := range ranks {
			assert.Equal(t, sum, ranks[r].download(t, recv[r], n), "rank %d", r)
		}
	})

	t.Run("reduce-scatter then all-gather", func(t *testing.T) {
		shard := n / world
		part := make([]uintptr, world)
		full := make([]uintptr, world)
		for r := range ranks {
			part[r] = ranks[r].upload(t, make([]float32, shard))
			full[r] = ranks[r].upload(t, make([]float32, shard*world))
		}
		require.NoError(t, lib.Group(func() error {
			for r, c := range comms {
				if err := c.ReduceScatter(send[r], part[r], shard, nccl.Float32, nccl.Sum, uintptr(ranks[r].stream)); err != nil {
					return err
				}
			}
			return nil
		}))
		for r := range ranks {
			assert.Equal(t, sum[r*shard:(r+1)*shard], ranks[r].download(t, part[r], shard), "rank %d's shard", r)
		}
		require.NoError(t, lib.Group(func() error {
			for r, c := range comms {
				if err := c.AllGather(part[r], full[r], shard, nccl.Float32, uintptr(ranks[r].stream)); err != nil {
					return err
				}
			}
			return nil
		}))
		for r := range ranks {
			assert.Equal(t, sum[:shard*world], ranks[r].download(t, full[r], shard*world), "rank %d", r)
		}
	})
	for _, r := range ranks {
		assert.NoError(t, r.engine.Check())
	}
}

// TestGPUInitRankFromGoroutines sets communicators up as separate processes would: one id, one
// goroutine per rank, each joining on its own device's context.
func TestGPUInitRankFromGoroutines(t *testing.T) {
	const n = 4096
	lib, ranks := gpus(t, 2)
	id, err := lib.UniqueID()
	require.NoError(t, err)
	world := len(ranks)
	comms := make([]*nccl.Comm, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comms[r], errs[r] = lib.InitRank(ranks[r].driver.Context(), world, id, r)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
		assert.Equal(t, ranks[r].driver.Ordinal(), comms[r].Device(), "rank %d joined on its own device", r)
	}
	bufs := make([]uintptr, world)
	want := make([]float32, n)
	for r := range ranks {
		bufs[r] = ranks[r].upload(t, rankData(r, n))
		for i, x := range rankData(r, n) {
			want[i] += x
		}
	}
	require.NoError(t, lib.Group(func() error {
		for r, c := range comms {
			if err := c.AllReduce(bufs[r], bufs[r], n, nccl.Float32, nccl.Sum, uintptr(ranks[r].stream)); err != nil {
				return err
			}
		}
		return nil
	}))
	for r := range ranks {
		assert.Equal(t, want, ranks[r].download(t, bufs[r], n), "rank %d (in place)", r)
		assert.NoError(t, comms[r].AsyncError())
	}
	for r, c := range comms {
		assert.NoError(t, c.Destroy(), "rank %d", r)
		assert.ErrorIs(t, c.Destroy(), nccl.ErrClosed, "rank %d destroyed twice", r)
		assert.ErrorIs(t, c.AllReduce(bufs[r], bufs[r], n, nccl.Float32, nccl.Sum, 0), nccl.ErrClosed)
	}
}
