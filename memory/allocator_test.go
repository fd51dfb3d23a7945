package memory

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

func TestGetPutRoundTrip(t *testing.T) {
	a := newHostAllocator(t, 64*g)
	sizes := []int64{1, 100, 4096, g - 1, g, 3*g + 17, 10 * g}
	var mems []*Block
	var total uint64
	for i, size := range sizes {
		m, err := a.Get(size)
		require.NoError(t, err)
		b := m.(*Block)
		assert.Equal(t, uintptr(size), b.MemSize())
		fillPattern(view(b, b.MemSize()), byte(i))
		mems = append(mems, b)
		total += uint64(size)
	}
	require.NoError(t, a.Check())
	assert.Equal(t, total, a.Stats().LiveBytes)
	assert.Equal(t, len(sizes), a.Stats().LiveBlocks)
	for i, b := range mems {
		assert.Equal(t, pattern(int(sizes[i]), byte(i)), view(b, b.MemSize()), "block %d kept its bytes", i)
	}
	for i, b := range mems {
		a.Put(b, sizes[i])
		require.NoError(t, a.Check())
	}
	s := a.Stats()
	assert.Zero(t, s.LiveBytes)
	assert.Zero(t, s.PutRejections)
	assert.NoError(t, a.LastPutError())
}

// TestSteadyStateMakesNoDriverCalls: repeating the same Get/Put script reuses cached blocks.
func TestSteadyStateMakesNoDriverCalls(t *testing.T) {
	a := newHostAllocator(t, 64*g)
	script := []int64{3 * g, 700, 5*g + 1, g, 12345}
	iteration := func() {
		var mems []tensor.Memory
		for _, size := range script {
			m, err := a.Get(size)
			require.NoError(t, err)
			mems = append(mems, m)
		}
		for i := range mems {
			require.NoError(t, a.Free(mems[i], script[i]))
		}
	}
	iteration()
	before := a.Stats()
	for range 5 {
		iteration()
	}
	after := a.Stats()
	assert.Equal(t, before.TotalDriverCalls(), after.TotalDriverCalls())
	assert.Equal(t, before.Outcomes.Exact+5*uint64(len(script)), after.Outcomes.Exact)
}

// TestBadInput covers every misuse the API can see: each returns a typed error, a rejected Put is
// counted and remembered, and the allocator stays consistent.
func TestBadInput(t *testing.T) {
	a := newHostAllocator(t, 16*g)
	live, err := a.Get(2 * g)
	require.NoError(t, err)
	freed, err := a.Get(g)
	require.NoError(t, err)
	require.NoError(t, a.Free(freed, g))
	heap := make([]byte, 64)
	foreign := newBlock(bytesAddr(heap), 64, nil)

	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"free foreign memory", func() error { return a.Free(foreign, 64) }, stitch.ErrUnknownPointer},
		{"free nil", func() error { return a.Free(nil, 64) }, stitch.ErrUnknownPointer},
		{"free interior pointer", func() error { return a.Free(newBlock(live.Uintptr()+512, g, nil), g) }, stitch.ErrUnknownPointer},
		{"double free", func() error { return a.Free(freed, g) }, stitch.ErrDoubleFree},
		{"free wrong size", func() error { return a.Free(live, g) }, stitch.ErrSizeMismatch},
		{"free size zero", func() error { return a.Free(live, 0) }, stitch.ErrInvalidSize},
		{"get zero", func() error { _, err := a.Get(0); return err }, stitch.ErrInvalidSize},
		{"get negative", func() error { _, err := a.Get(-5); return err }, stitch.ErrInvalidSize},
		{"get beyond capacity", func() error { _, err := a.Get(1 << 40); return err }, stitch.ErrTooLarge},
		{"get more than is left", func() error { _, err := a.Get(15 * g); return err }, stitch.ErrOutOfMemory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			assert.ErrorIs(t, err, tt.want)
			assert.NoError(t, a.Check())
		})
	}

	var oom *stitch.OutOfMemoryError
	_, err = a.Get(15 * g)
	require.ErrorAs(t, err, &oom)
	assert.Equal(t, uint64(15*g), oom.Requested)

	t.Run("put rejections are counted", func(t *testing.T) {
		again, err := a.Get(g)
		require.NoError(t, err)
		a.Put(again, g)
		require.Zero(t, a.Stats().PutRejections)
		rejected := []struct {
			mem  tensor.Memory
			size int64
			want error
		}{
			{foreign, 64, stitch.ErrUnknownPointer},
			{again, g, stitch.ErrDoubleFree},
			{live, 3 * g, stitch.ErrSizeMismatch},
		}
		for i, r := range rejected {
			a.Put(r.mem, r.size)
			assert.Equal(t, uint64(i+1), a.Stats().PutRejections)
			assert.ErrorIs(t, a.LastPutError(), r.want)
			assert.NoError(t, a.Check())
		}
	})

	require.NoError(t, a.Free(live, 2*g), "the live block survived every rejected call")
	assert.Zero(t, a.Stats().LiveBytes)
	assert.NoError(t, a.Check())
}

func TestCallsAfterClose(t *testing.T) {
	d, err := host.New(host.WithGranularity(g), host.WithCapacity(64*g))
	require.NoError(t, err)
	a, err := NewAllocator(d)
	require.NoError(t, err)
	m, err := a.Get(g)
	require.NoError(t, err)
	require.NoError(t, a.Close())

	calls := map[string]func() error{
		"get":         func() error { _, err := a.Get(g); return err },
		"free":        func() error { return a.Free(m, g) },
		"empty cache": func() error { return a.EmptyCache() },
		"check":       func() error { return a.Check() },
		"close":       func() error { return a.Close() },
		"put": func() error {
			a.Put(m, g)
			return a.LastPutError()
		},
	}
	for name, call := range calls {
		assert.ErrorIs(t, call(), stitch.ErrClosed, name)
	}
	a.ResetAllocator() // a step boundary: nothing to do, must not panic
	assert.Equal(t, uint64(1), a.Stats().PutRejections)
	_, err = d.Create(g)
	assert.ErrorIs(t, err, host.ErrClosed, "Close closed the driver")
}

// TestResetAllocatorKeepsLiveBlocks: ResetAllocator (Gorgonia's VMs call it at Reset) frees
// nothing: live blocks keep their bytes, cached memory stays reserved, and each block is freed once
// by its owner.
func TestResetAllocatorKeepsLiveBlocks(t *testing.T) {
	a := newHostAllocator(t, 128*g)
	sizes := []int64{g, 100, 3 * g}
	var mems []tensor.Memory
	for i, size := range sizes {
		m, err := a.Get(size)
		require.NoError(t, err)
		fillPattern(view(m, m.MemSize()), byte(i))
		mems = append(mems, m)
	}
	cached, err := a.Get(5 * g)
	require.NoError(t, err)
	require.NoError(t, a.Free(cached, 5*g))
	before := a.Stats()
	a.ResetAllocator()
	after := a.Stats()
	assert.Equal(t, before.LiveBytes, after.LiveBytes)
	assert.Equal(t, before.ReservedBytes, after.ReservedBytes, "physical memory stays cached")
	assert.Equal(t, before.TotalDriverCalls(), after.TotalDriverCalls())
	for i, m := range mems {
		assert.Equal(t, pattern(int(sizes[i]), byte(i)), view(m, m.MemSize()), "block %d kept its bytes", i)
		require.NoError(t, a.Free(m, sizes[i]))
	}
	assert.Zero(t, a.Stats().LiveBytes)
	assert.NoError(t, a.Check())
}

func TestNewAllocatorClosesDriverOnFailure(t *testing.T) {
	d, err := host.New(host.WithGranularity(g))
	require.NoError(t, err)
	_, err = NewAllocator(d, WithEngineOptions(stitch.WithStitchBudget(-1, 0)))
	require.ErrorIs(t, err, stitch.ErrBadOption)
	_, err = d.Create(g)
	assert.ErrorIs(t, err, host.ErrClosed)
}

func TestAllocatorOverSimDriver(t *testing.T) {
	a, err := NewAllocator(sim.New(sim.WithCapacity(1<<30), sim.WithGranularity(2<<20)))
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	m, err := a.Get(5 << 20)
	require.NoError(t, err)
	require.NoError(t, a.Free(m, 5<<20))
	_, err = NewTensorEngine(a)
	assert.True(t, errors.Is(err, ErrNotHostAccessible), "%v", err)
}

func TestPutRejectionIsLogged(t *testing.T) {
	var logged bytes.Buffer
	d, err := host.New(host.WithGranularity(g))
	require.NoError(t, err)
	a, err := NewAllocator(d, WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	m, err := a.Get(g)
	require.NoError(t, err)
	a.Put(m, g)
	assert.NotContains(t, logged.String(), "put rejected")
	a.Put(m, g)
	assert.Contains(t, logged.String(), "put rejected")
	assert.Contains(t, logged.String(), "double free")
}

// TestMarkIteration passes the hint to the engine while open and ignores it after Close.
func TestMarkIteration(t *testing.T) {
	a := newHostAllocator(t, 64*g)
	var first uintptr
	for i := range 3 {
		a.MarkIteration()
		m, err := a.Get(3 * int64(g))
		require.NoError(t, err)
		if i == 0 {
			first = m.Uintptr()
		}
		assert.Equal(t, first, m.Uintptr(), "iteration %d replays the first", i)
		require.NoError(t, a.Free(m, 3*int64(g)))
	}
	require.NoError(t, a.Check())
	require.NoError(t, a.Close())
	a.MarkIteration()
}
