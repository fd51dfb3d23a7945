package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSumAndMaxOverEachAxis(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(11, 12))
	for _, shape := range [][]int{{3, 4, 5}, {7, 3000}, {2, 1025}} {
		h := normalSlice(r, numel(shape))
		x := upload(t, d, h, shape...)
		for axis := range shape {
			outer, inner := numel(shape[:axis]), numel(shape[axis+1:])
			n := shape[axis]
			sum, mx := make([]float64, outer*inner), make([]float64, outer*inner)
			for o := range outer {
				for i := range inner {
					s, m := 0.0, math.Inf(-1)
					for k := range n {
						v := float64(h[(o*n+k)*inner+i])
						s += v
						m = math.Max(m, v)
					}
					sum[o*inner+i], mx[o*inner+i] = s, m
				}
			}
			out := empty(t, d, outer*inner)
			require.NoError(t, d.Sum(out, x, axis))
			assertClose(t, sum, download(t, out), tolReduce, "sum")
			require.NoError(t, d.Max(out, x, axis))
			assertClose(t, mx, download(t, out), 0, "max")
		}
	}
}

func TestSumSquaresAccumulates(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(13, 14))
	acc := empty(t, d, 1)
	require.NoError(t, d.Zero(acc))
	want := 0.0
	for _, n := range []int{1, 1000, 300001} {
		h := normalSlice(r, n)
		for _, v := range h {
			want += float64(v) * float64(v)
		}
		require.NoError(t, d.SumSquares(acc, upload(t, d, h, n)))
	}
	assertClose(t, []float64{want}, download(t, acc), tolReduce, "sum of squares")
}
