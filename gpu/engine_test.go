package gpu

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/stitch"
)

// TestOnStitchedMemory runs kernels and cuBLAS on memory from the gmlake engine over driver/cuda,
// after a fragmenting pattern, so that the tensors computed on include stitched blocks (one
// virtual range over physical chunks from several freed blocks).
func TestOnStitchedMemory(t *testing.T) {
	newDevice(t) // skips without a GPU
	drv, err := cuda.New()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, drv.Close()) })
	eng, err := stitch.New(drv, stitch.WithCapacity(128<<20))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, eng.Close()) })
	d := newDevice(t, WithAllocator(eng))

	// Fragment: eight 16 MiB tensors fill the 128 MiB capacity; free every other one, then ask for
	// 48 MiB while the others live: only stitching three freed pieces can serve it.
	const mib4 = 1 << 20 // float32s in 4 MiB
	var blocks []*Tensor
	for range 8 {
		b, err := d.NewTensor(4 * mib4)
		require.NoError(t, err)
		blocks = append(blocks, b)
	}
	for i := 0; i < 8; i += 2 {
		require.NoError(t, blocks[i].Free())
	}
	r := rand.New(rand.NewPCG(39, 40))
	const rows, cols = 3072, 4096 // 48 MiB
	h := normalSlice(r, rows*cols)
	x, err := d.FromHost(h, rows, cols)
	require.NoError(t, err)
	defer x.Free()
	st := eng.Stats()
	t.Logf("engine after the big allocation: %+v", st)
	assert.Positive(t, st.Outcomes.Stitch, "the 48 MiB tensor should have been stitched")

	for i := 1; i < 8; i += 2 {
		require.NoError(t, blocks[i].Free())
	}

	// Softmax over the stitched tensor matches the CPU.
	y, err := d.NewTensor(rows, cols)
	require.NoError(t, err)
	defer y.Free()
	require.NoError(t, d.Softmax(y, x))
	got := download(t, y)
	for _, row := range []int{0, 1023, 2048, rows - 1} { // spot rows across the seams
		assertClose(t, softmaxRef(to64(h[row*cols:(row+1)*cols]), cols, 0, 1), got[row*cols:(row+1)*cols],
			tolElem, "softmax on stitched memory")
	}

	// A GEMM reading the stitched tensor.
	w := upload(t, d, normalSlice(r, cols*8), cols, 8)
	out := empty(t, d, rows, 8)
	require.NoError(t, d.MatMul(out, x, w, false, false, 1, 0))
	hw := download(t, w)
	want := matmulRef(h[:16*cols], 16, cols, hw, cols, 8, false, false, 1, 0, make([]float32, 16*8))
	assertClose(t, want, download(t, out)[:16*8], tolReduce, "matmul on stitched memory")

	require.NoError(t, d.Synchronize())
	assert.NoError(t, eng.Check())
}
