package ops

import (
	"fmt"
	"sync"

	"gonum.org/v1/gonum/blas/blas32"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ConvShape is a 2-D convolution's geometry: images x [N, C, H, W] (NCHW) and filters
// [K, C, R, S] give y [N, K, P, Q] with P = (H + 2·PadH − R)/StrideH + 1 (likewise Q). No
// dilation, no groups, no bias (a batch norm follows every convolution of the models).
type ConvShape struct {
	N, C, H, W       int // input
	K, R, S          int // filters: K of C×R×S
	StrideH, StrideW int
	PadH, PadW       int
}

// P and Q are the output height and width.
func (s ConvShape) P() int { return (s.H+2*s.PadH-s.R)/s.StrideH + 1 }
func (s ConvShape) Q() int { return (s.W+2*s.PadW-s.S)/s.StrideW + 1 }

func (s ConvShape) String() string {
	return fmt.Sprintf("x=%dx%dx%dx%d,w=%dx%dx%dx%d,stride=%dx%d,pad=%dx%d",
		s.N, s.C, s.H, s.W, s.K, s.C, s.R, s.S, s.StrideH, s.StrideW, s.PadH, s.PadW)
}

func (s ConvShape) inShape() tensor.Shape     { return tensor.Shape{s.N, s.C, s.H, s.W} }
func (s ConvShape) filterShape() tensor.Shape { return tensor.Shape{s.K, s.C, s.R, s.S} }
func (s ConvShape) outShape() tensor.Shape    { return tensor.Shape{s.N, s.K, s.P(), s.Q()} }

func (s ConvShape) validate() error {
	if s.N <= 0 || s.C <= 0 || s.H <= 0 || s.W <= 0 || s.K <= 0 || s.R <= 0 || s.S <= 0 ||
		s.StrideH <= 0 || s.StrideW <= 0 || s.PadH < 0 || s.PadW < 0 || s.P() <= 0 || s.Q() <= 0 {
		return fmt.Errorf("%w: convolution %v", ErrInput, s)
	}
	return nil
}

// convPart says what a convolution kernel computes; the three are the three cuDNN calls.
type convPart int

const (
	convForward    convPart = iota // y from (x, w)
	convGradData                   // dx from (dy, w)
	convGradFilter                 // dw from (x, dy)
)

type conv struct {
	shape ConvShape
	part  convPart
}

// Conv2d convolves images x [N, C, H, W] with filters w [K, C, R, S] (cross-correlation, as
// every framework's conv layer), stride and zero padding per dimension. Its gradients are the
// convolution's backward-data and backward-filter ops, so a GPU executor maps each of the three
// to one cuDNN call. On the CPU all three run through Gorgonia's im2col and col2im, one image at
// a time, with GEMMs over the column matrix.
func Conv2d(x, w *gorgonia.Node, strideH, strideW, padH, padW int) (*gorgonia.Node, error) {
	xs, ws := x.Shape(), w.Shape()
	if len(xs) != 4 || len(ws) != 4 || xs[1] != ws[1] {
		return nil, fmt.Errorf("%w: Conv2d of %v by filters %v", ErrInput, xs, ws)
	}
	s := ConvShape{N: xs[0], C: xs[1], H: xs[2], W: xs[3], K: ws[0], R: ws[2], S: ws[3],
		StrideH: strideH, StrideW: strideW, PadH: padH, PadW: padW}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return apply(conv{shape: s}, x, w)
}

func (k conv) String() string { return fmt.Sprintf("Conv2d{%v,part=%d}", k.shape, k.part) }

func (k conv) signature() ([]argType, argType) { return []argType{f32(4), f32(4)}, f32(4) }

func (k conv) outShape(in []tensor.Shape) (tensor.Shape, error) {
	s := k.shape
	want := map[convPart][2]tensor.Shape{
		convForward:    {s.inShape(), s.filterShape()},
		convGradData:   {s.outShape(), s.filterShape()},
		convGradFilter: {s.inShape(), s.outShape()},
	}[k.part]
	if !in[0].Eq(want[0]) || !in[1].Eq(want[1]) {
		return nil, fmt.Errorf("%w: %v: inputs %v, %v (want %v, %v)", ErrInput, k, in[0], in[1], want[0], want[1])
	}
	switch k.part {
	case convGradData:
		return s.inShape(), nil
	case convGradFilter:
		return s.filterShape(), nil
	}
	return s.outShape(), nil
}

func (k conv) forward(out []float32, in []*tensor.Dense) error {
	s := k.shape
	cols := s.P() * s.Q()
	crs := s.C * s.R * s.S
	img, outImg := s.C*s.H*s.W, s.K*cols
	col := make([]float32, cols*crs)
	colM := blas32.General{Rows: cols, Cols: crs, Stride: crs, Data: col}
	switch k.part {
	case convForward: // y[n] [K, PQ] = w [K, CRS] · col[n]ᵀ
		x, w := data(in[0]), data(in[1])
		wM := blas32.General{Rows: s.K, Cols: crs, Stride: crs, Data: w}
		for n := range s.N {
			if err := k.im2col(col, x[n*img:(n+1)*img]); err != nil {
				return err
			}
			gemm(false, true, 1, wM, colM, 0, blas32.General{Rows: s.K, Cols: cols, Stride: cols, Data: out[n*outImg : (n+1)*outImg]})
		}
	case convGradData: // col[n] = dy[n]ᵀ · w, dx[n] = col2im(col[n])
		dy, w := data(in[0]), data(in[1])
		wM := blas32.General{Rows: s.K, Cols: crs, Stride: crs, Data: w}
		for n := range s.N {
			gemm(true, false, 1, blas32.General{Rows: s.K, Cols: cols, Stride: cols, Data: dy[n*outImg : (n+1)*outImg]}, wM, 0, colM)
			if err := k.col2im(out[n*img:(n+1)*img], col); err != nil {
				return err
			}
		}
	case convGradFilter: // dw = Σ_n dy[n] · col[n]
		x, dy := data(in[0]), data(in[1])
		dw := blas32.General{Rows: s.K, Cols: crs, Stride: crs, Data: out}
		clear(out)
		for n := range s.N {
			if err := k.im2col(col, x[n*img:(n+1)*img]); err != nil {
				return err
			}
			gemm(false, false, 1, blas32.General{Rows: s.K, Cols: cols, Stride: cols, Data: dy[n*outImg : (n+1)*outImg]}, colM, 1, dw)
		}
	}
	return nil
}

// im2col writes one image's column matrix [P·Q, C·R·S] (Gorgonia's layout, which matches the
// filters' [K, C·R·S] flattening).
func (k conv) im2col(col, img []float32) error {
	ops, err := gorgoniaIm2Col(k.shape)
	if err != nil {
		return err
	}
	s := k.shape
	src := tensor.New(tensor.WithShape(1, s.C, s.H, s.W), tensor.WithBacking(img))
	dst := tensor.New(tensor.WithShape(1, s.P(), s.Q(), s.C*s.R*s.S), tensor.WithBacking(col))
	_, err = ops.im2col.UsePreallocDo(dst, src)
	return err
}

// col2im sums a column matrix back into one image (the adjoint of im2col).
func (k conv) col2im(img, col []float32) error {
	ops, err := gorgoniaIm2Col(k.shape)
	if err != nil {
		return err
	}
	s := k.shape
	src := tensor.New(tensor.WithShape(1, s.P(), s.Q(), s.C*s.R*s.S), tensor.WithBacking(col))
	dst := tensor.New(tensor.WithShape(1, s.C, s.H, s.W), tensor.WithBacking(img))
	_, err = ops.col2im.UsePreallocDo(dst, src)
	return err
}

func (k conv) diffWRT() []bool {
	if k.part != convForward {
		return []bool{false, false}
	}
	return []bool{true, true}
}

func (k conv) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := apply(conv{shape: k.shape, part: convGradData}, g, in[1])
	if err != nil {
		return nil, err
	}
	dw, err := apply(conv{shape: k.shape, part: convGradFilter}, in[0], g)
	return gorgonia.Nodes{dx, dw}, err
}

// im2colOps are Gorgonia's im2col op and its adjoint col2im for one image of a ConvShape. The
// ops are unexported in Gorgonia, so they are taken from the nodes gorgonia.Im2Col and its
// symbolic gradient build in a scratch graph, once per geometry.
type im2colOps struct {
	im2col, col2im gorgonia.UsePreallocDoer
}

var im2colCache sync.Map // ConvShape with N = 1 -> im2colOps

func gorgoniaIm2Col(s ConvShape) (im2colOps, error) {
	s.N, s.K = 1, 0
	if v, ok := im2colCache.Load(s); ok {
		return v.(im2colOps), nil
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(1, s.C, s.H, s.W), gorgonia.WithName("x"))
	col, err := gorgonia.Im2Col(x, tensor.Shape{s.R, s.S}, tensor.Shape{s.PadH, s.PadW},
		tensor.Shape{s.StrideH, s.StrideW}, tensor.Shape{1, 1})
	if err != nil {
		return im2colOps{}, fmt.Errorf("%w: im2col for %v: %w", ErrInput, s, err)
	}
	dcol := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(col.Shape()...), gorgonia.WithName("dcol"))
	dx, err := col.Op().(gorgonia.SDOp).SymDiff(gorgonia.Nodes{x}, col, dcol)
	if err != nil {
		return im2colOps{}, fmt.Errorf("%w: col2im for %v: %w", ErrInput, s, err)
	}
	fwd, ok1 := col.Op().(gorgonia.UsePreallocDoer)
	adj, ok2 := dx[0].Op().(gorgonia.UsePreallocDoer)
	if !ok1 || !ok2 {
		return im2colOps{}, fmt.Errorf("%w: Gorgonia's im2col/col2im cannot write into a buffer", ErrInput)
	}
	ops := im2colOps{im2col: fwd, col2im: adj}
	im2colCache.Store(s, ops)
	return ops, nil
}
