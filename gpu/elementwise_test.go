package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBinaryBroadcasting(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(1, 2))
	ops := map[BinaryOp]func(x, y float64) float64{
		OpAdd: func(x, y float64) float64 { return x + y },
		OpSub: func(x, y float64) float64 { return x - y },
		OpMul: func(x, y float64) float64 { return x * y },
		OpDiv: func(x, y float64) float64 { return x / y },
	}
	shapes := []struct{ a, b []int }{
		{[]int{1000}, []int{1000}},
		{[]int{4, 5}, []int{5}},
		{[]int{4, 1}, []int{4, 5}},
		{[]int{2, 3, 4, 5}, []int{3, 1, 5}},
		{[]int{1}, []int{2, 3}},
		{[]int{2, 1, 4, 1, 3}, []int{5, 1}}, // rank 5, collapses to 4
	}
	for op, ref := range ops {
		for _, sh := range shapes {
			t.Run(string(op), func(t *testing.T) {
				out, err := BroadcastShape(sh.a, sh.b)
				require.NoError(t, err)
				ha := randSlice(r, numel(sh.a), -2, 2)
				hb := randSlice(r, numel(sh.b), 0.5, 2) // away from 0 for Div
				a, b := upload(t, d, ha, sh.a...), upload(t, d, hb, sh.b...)
				o := empty(t, d, out...)
				require.NoError(t, d.Binary(op, o, a, b))
				want := make([]float64, numel(out))
				for i := range want {
					c := unravel(i, out)
					want[i] = ref(float64(ha[broadcastIndex(c, sh.a)]), float64(hb[broadcastIndex(c, sh.b)]))
				}
				assertClose(t, want, download(t, o), tolElem, string(op))
			})
		}
	}
}

func TestBinaryOnStridedView(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(3, 4))
	ha, hb := normalSlice(r, 6*7), normalSlice(r, 7*6)
	a := upload(t, d, ha, 6, 7)
	b := upload(t, d, hb, 7, 6)
	bt, err := b.Permute(1, 0) // (6, 7), strides (1, 6)
	require.NoError(t, err)
	o := empty(t, d, 6, 7)
	require.NoError(t, d.Add(o, a, bt))
	want := make([]float64, 42)
	for i := range 6 {
		for j := range 7 {
			want[i*7+j] = float64(ha[i*7+j]) + float64(hb[j*6+i])
		}
	}
	assertClose(t, want, download(t, o), tolElem, "a + b^T")
}

func TestUnary(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(5, 6))
	tests := []struct {
		op     UnaryOp
		lo, hi float64
		ref    func(float64) float64
	}{
		{OpExp, -5, 5, math.Exp},
		{OpLog, 0.01, 10, math.Log},
		{OpNeg, -3, 3, func(x float64) float64 { return -x }},
		{OpSquare, -3, 3, func(x float64) float64 { return x * x }},
		{OpCube, -3, 3, func(x float64) float64 { return x * x * x }},
		{OpSqrt, 0, 10, math.Sqrt},
		{OpInverse, 0.1, 3, func(x float64) float64 { return 1 / x }},
		{OpTanh, -4, 4, math.Tanh},
		{OpSigmoid, -8, 8, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
		{OpAbs, -3, 3, math.Abs},
		{OpReLU, -3, 3, func(x float64) float64 { return math.Max(x, 0) }},
	}
	for _, tt := range tests {
		t.Run(string(tt.op), func(t *testing.T) {
			h := randSlice(r, 3001, tt.lo, tt.hi)
			x := upload(t, d, h, 3001)
			o := empty(t, d, 3001)
			require.NoError(t, d.Unary(tt.op, o, x))
			want := make([]float64, len(h))
			for i, v := range h {
				want[i] = tt.ref(float64(v))
			}
			assertClose(t, want, download(t, o), tolElem, string(tt.op))
		})
	}
}

func TestScalarOps(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(7, 8))
	hx, hy := normalSlice(r, 513), normalSlice(r, 513)
	x, y := upload(t, d, hx, 513), upload(t, d, hy, 513)
	o := empty(t, d, 513)

	want := func(f func(i int) float64) []float64 {
		w := make([]float64, 513)
		for i := range w {
			w[i] = f(i)
		}
		return w
	}
	require.NoError(t, d.Scale(o, x, -1.5))
	assertClose(t, want(func(i int) float64 { return -1.5 * float64(hx[i]) }), download(t, o), tolElem, "scale")
	require.NoError(t, d.AddScalar(o, x, 0.25))
	assertClose(t, want(func(i int) float64 { return float64(hx[i]) + 0.25 }), download(t, o), tolElem, "add scalar")
	require.NoError(t, d.Axpy(y, x, 2))
	assertClose(t, want(func(i int) float64 { return float64(hy[i]) + 2*float64(hx[i]) }), download(t, y), tolElem, "axpy")
	require.NoError(t, d.Fill(o, 3.5))
	assertClose(t, want(func(int) float64 { return 3.5 }), download(t, o), 0, "fill")
	require.NoError(t, d.Zero(o))
	assertClose(t, want(func(int) float64 { return 0 }), download(t, o), 0, "zero")
}

func TestCopyMaterialisesViews(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(9, 10))
	shape := []int{2, 3, 4, 5}
	h := normalSlice(r, numel(shape))
	x := upload(t, d, h, shape...)

	perm := []int{0, 2, 1, 3} // (batch, t, heads, d) <-> (batch, heads, t, d)
	v, err := x.Permute(perm...)
	require.NoError(t, err)
	assert.False(t, v.Contiguous())
	o := empty(t, d, v.Shape()...)
	require.NoError(t, d.Copy(o, v))
	want := make([]float64, len(h))
	st := rowMajor(shape)
	for i := range want {
		c := unravel(i, v.Shape())
		src := 0
		for k, p := range perm {
			src += c[k] * st[p]
		}
		want[i] = float64(h[src])
	}
	assertClose(t, want, download(t, o), 0, "permute copy")

	// ToHost of a view materialises it the same way.
	assertClose(t, want, download(t, v), 0, "permuted ToHost")

	// A broadcast view.
	row := upload(t, d, h[:5], 5)
	bv, err := row.BroadcastTo(3, 5)
	require.NoError(t, err)
	got := download(t, bv)
	for i := range 3 {
		assertClose(t, to64(h[:5]), got[i*5:(i+1)*5], 0, "broadcast row")
	}
}

func TestShapeErrors(t *testing.T) {
	d := newDevice(t)
	a, b := empty(t, d, 2, 3), empty(t, d, 4)
	o := empty(t, d, 2, 3)
	assert.ErrorIs(t, d.Add(o, a, b), ErrShape)
	assert.ErrorIs(t, d.Unary(OpExp, b, a), ErrShape)
	assert.ErrorIs(t, d.MatMul(o, a, a, false, false, 1, 0), ErrShape)
	_, err := d.NewIds([]int32{0, 5}, 5)
	assert.ErrorIs(t, err, ErrIndex)
}
