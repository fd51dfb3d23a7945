package gmlake

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/internal/usergraph"
	"github.com/gmlake/gmlake/memory"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/train/vm"
)

const testGranularity = 64 << 10

func TestOptions(t *testing.T) {
	t.Run("granularity", func(t *testing.T) {
		a, err := NewAllocator(WithGranularity(4 << 20)) // valid for the host and the CUDA driver
		require.NoError(t, err)
		defer func() { require.NoError(t, a.Close()) }()
		assert.Equal(t, uint64(4<<20), a.Granularity())
	})
	t.Run("with driver", func(t *testing.T) {
		d := sim.New(sim.WithCapacity(64<<20), sim.WithGranularity(2<<20))
		a, err := NewAllocator(WithDriver(d), WithSmallThreshold(1<<20), WithSmallPageSize(2<<20),
			WithMinStitch(2<<20), WithStitchBudget(16, 1<<30), WithGrowthSlack(0.01), WithWarmupGrowth(8<<20), WithHandleSize(4<<20),
			WithLogger(nil))
		require.NoError(t, err)
		defer func() { require.NoError(t, a.Close()) }()
		assert.Same(t, d, a.Driver())
	})
	t.Run("capacity", func(t *testing.T) {
		a, err := NewAllocator(WithCapacity(8 << 20))
		require.NoError(t, err)
		defer func() { require.NoError(t, a.Close()) }()
		_, err = a.Get(9 << 20)
		assert.ErrorIs(t, err, stitch.ErrTooLarge)
	})
	t.Run("granularity with driver", func(t *testing.T) {
		_, err := NewAllocator(WithDriver(sim.New()), WithGranularity(testGranularity))
		assert.ErrorIs(t, err, ErrBadOption)
	})
	t.Run("bad engine option", func(t *testing.T) {
		_, err := NewAllocator(WithStitchBudget(-1, 0))
		assert.ErrorIs(t, err, stitch.ErrBadOption)
		_, err = NewAllocator(WithGrowthSlack(1))
		assert.ErrorIs(t, err, stitch.ErrBadOption, "WithGrowthSlack reaches the engine")
	})
}

func TestNewTensorEngine(t *testing.T) {
	d, err := host.New(host.WithGranularity(testGranularity))
	require.NoError(t, err)
	e, err := NewTensorEngine(WithDriver(d))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Allocator().Close()) }()
	x := tensor.New(tensor.WithEngine(e), tensor.Of(tensor.Float64), tensor.WithShape(4))
	assert.Equal(t, uint64(32), e.Allocator().Stats().LiveBytes)
	assert.Equal(t, []float64{0, 0, 0, 0}, x.Data())

	_, err = NewTensorEngine(WithDriver(sim.New()))
	assert.ErrorIs(t, err, memory.ErrNotHostAccessible, "the simulated driver has no memory to compute on")
}

// TestBadInputAtTheAPI: every misuse of the allocator NewAllocator returns fails with a typed error,
// a rejected Put is counted, and the allocator stays consistent. It runs on the default driver, so
// on a GPU machine the same test checks the same on device memory.
func TestBadInputAtTheAPI(t *testing.T) {
	const gr = 2 << 20 // the default granularity
	a, err := NewAllocator(WithCapacity(16 * gr))
	require.NoError(t, err)
	live, err := a.Get(gr)
	require.NoError(t, err)
	freed, err := a.Get(2 * gr)
	require.NoError(t, err)
	require.NoError(t, a.Free(freed, 2*gr))
	other, err := NewAllocator(WithCapacity(16 * gr))
	require.NoError(t, err)
	defer func() { require.NoError(t, other.Close()) }()
	foreign, err := other.Get(gr)
	require.NoError(t, err)

	for _, tt := range []struct {
		name string
		call func() error
		want error
	}{
		{"size zero", func() error { _, err := a.Get(0); return err }, stitch.ErrInvalidSize},
		{"negative size", func() error { _, err := a.Get(-1); return err }, stitch.ErrInvalidSize},
		{"memory of another allocator", func() error { return a.Free(foreign, gr) }, stitch.ErrUnknownPointer},
		{"double free", func() error { return a.Free(freed, 2*gr) }, stitch.ErrDoubleFree},
		{"wrong size", func() error { return a.Free(live, 2*gr) }, stitch.ErrSizeMismatch},
		{"beyond capacity", func() error { _, err := a.Get(17 * gr); return err }, stitch.ErrTooLarge},
		{"more than is free", func() error { _, err := a.Get(16 * gr); return err }, stitch.ErrOutOfMemory},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.call(), tt.want)
			assert.NoError(t, a.Check())
		})
	}

	a.Put(freed, 2*gr)
	a.Put(foreign, gr)
	assert.Equal(t, uint64(2), a.Stats().PutRejections)
	assert.ErrorIs(t, a.LastPutError(), stitch.ErrUnknownPointer)
	assert.NoError(t, a.Check())

	require.NoError(t, a.Close())
	_, err = a.Get(gr)
	assert.ErrorIs(t, err, stitch.ErrClosed)
	assert.ErrorIs(t, a.Free(live, gr), stitch.ErrClosed)
	a.Put(live, gr)
	assert.ErrorIs(t, a.LastPutError(), stitch.ErrClosed)
	assert.Equal(t, uint64(3), a.Stats().PutRejections)
}

// TestEveryEngineOptionReachable: the root package has an option of the same name for every option
// of package stitch, so that NewAllocator is the one option layer a user needs.
func TestEveryEngineOptionReachable(t *testing.T) {
	stitchOpts := exportedOptions(t, "stitch", "Option")
	require.NotEmpty(t, stitchOpts)
	rootOpts := exportedOptions(t, ".", "Option")
	for name := range stitchOpts {
		assert.Contains(t, rootOpts, name, "stitch.%s has no gmlake.%s", name, name)
	}
}

// exportedOptions are the names of the exported functions in dir's non-test files that return a
// value of type result.
func exportedOptions(t *testing.T, dir, result string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
				continue
			}
			if id, ok := fn.Type.Results.List[0].Type.(*ast.Ident); ok && id.Name == result {
				names[fn.Name.Name] = true
			}
		}
	}
	return names
}

// TestSmallJob: a user MLP whose training step peaks near 51 KB, trained through train/vm. With
// the defaults it reserves a whole 2 MiB page; WithJobSize(51 KB) scales granularity and small
// threshold to it.
func TestSmallJob(t *testing.T) {
	n, err := usergraph.MLP(usergraph.Spec{Batch: 48, Width: 32, Hidden: 56, Out: 10, Seed: 1})
	require.NoError(t, err)
	run := func(opts ...Option) (memory.Stats, uint64) {
		a, err := NewAllocator(append([]Option{WithHostMemory()}, opts...)...)
		require.NoError(t, err)
		defer func() { require.NoError(t, a.Close()) }()
		m, err := vm.New(n.G, a)
		require.NoError(t, err)
		for range 3 {
			require.NoError(t, m.RunAll())
		}
		require.NoError(t, m.Close())
		require.NoError(t, a.Check())
		return a.Stats(), a.Granularity()
	}
	def, defGran := run()
	require.InDelta(t, 51<<10, def.PeakLiveBytes, 4<<10, "a job of about 51 KB")
	small, smallGran := run(WithJobSize(def.PeakLiveBytes))
	t.Logf("peak live %d B; defaults: granularity %d, peak reserved %d, fragmentation %.3f; WithJobSize: granularity %d, peak reserved %d, fragmentation %.3f",
		def.PeakLiveBytes, defGran, def.PeakReservedBytes, def.Fragmentation(), smallGran, small.PeakReservedBytes, small.Fragmentation())
	assert.Greater(t, def.Fragmentation(), 0.9, "the defaults are for GPU-sized jobs")
	assert.Less(t, small.Fragmentation(), 0.1)
	assert.Equal(t, def.PeakLiveBytes, small.PeakLiveBytes)

	a, err := NewAllocator(WithHostMemory(), WithJobSize(51<<10), WithSmallThreshold(1024))
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	assert.Equal(t, uint64(4096), a.Granularity(), "a sixteenth of 51 KB, raised to the page size")
}

func TestJobGranularity(t *testing.T) {
	page := uint64(os.Getpagesize())
	for _, tt := range []struct{ job, want uint64 }{
		{1, page}, {51 << 10, max(page, 2048)}, {1 << 20, max(page, 64<<10)}, {100 << 20, 2 << 20}, {1 << 40, 2 << 20},
	} {
		assert.Equal(t, tt.want, jobGranularity(tt.job), "job of %d bytes", tt.job)
	}
}
