package graphexec

import (
	"fmt"
	"math"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// hostArray is a strided float32 view of host memory, the tests' stand-in for a device tensor.
type hostArray struct {
	data    []float32 // the whole allocation, shared by views
	off     int
	shape   []int
	strides []int
}

func contiguous(shape []int) []int {
	st := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= shape[i]
	}
	return st
}

func count(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// offsets lists the data offsets of t's elements in row-major order.
func (t *hostArray) offsets() []int {
	out := make([]int, 0, count(t.shape))
	idx := make([]int, len(t.shape))
	for range count(t.shape) {
		o := t.off
		for k, i := range idx {
			o += i * t.strides[k]
		}
		out = append(out, o)
		for k := len(idx) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < t.shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return out
}

func (t *hostArray) values() []float32 {
	out := make([]float32, 0, count(t.shape))
	for _, o := range t.offsets() {
		out = append(out, t.data[o])
	}
	return out
}

func (t *hostArray) isContiguous() bool { return slices.Equal(t.strides, contiguous(t.shape)) }

// hostArrays implements arrays on the host, each primitive as the kernel that implements it on
// the Device computes it (softmax_axis.cu's order, strided.cu's views). live counts allocations
// not freed.
type hostArrays struct{ live int }

func (*hostArrays) shape(t *hostArray) []int { return t.shape }

func (h *hostArrays) alloc(shape ...int) (*hostArray, error) {
	h.live++
	data := make([]float32, max(count(shape), 1))
	for i := range data {
		data[i] = float32(math.NaN()) // uninitialised, as device memory is
	}
	return &hostArray{data: data, shape: slices.Clone(shape), strides: contiguous(shape)}, nil
}

func (h *hostArrays) free(*hostArray) error { h.live--; return nil }

func (*hostArrays) reshape(t *hostArray, shape ...int) (*hostArray, error) {
	if !t.isContiguous() || count(shape) != count(t.shape) {
		return nil, fmt.Errorf("reshape %v (strides %v) to %v", t.shape, t.strides, shape)
	}
	return &hostArray{data: t.data, off: t.off, shape: slices.Clone(shape), strides: contiguous(shape)}, nil
}

func (*hostArrays) permute(t *hostArray, perm ...int) (*hostArray, error) {
	if len(perm) != len(t.shape) {
		return nil, fmt.Errorf("permute %v by %v", t.shape, perm)
	}
	v := &hostArray{data: t.data, off: t.off, shape: make([]int, len(perm)), strides: make([]int, len(perm))}
	for i, p := range perm {
		v.shape[i], v.strides[i] = t.shape[p], t.strides[p]
	}
	return v, nil
}

func (*hostArrays) narrow(t *hostArray, axis, start, end, step int) (*hostArray, error) {
	if axis >= len(t.shape) || start < 0 || end > t.shape[axis] || start > end || step < 1 {
		return nil, fmt.Errorf("narrow axis %d [%d:%d:%d] of %v", axis, start, end, step, t.shape)
	}
	v := &hostArray{data: t.data, off: t.off + start*t.strides[axis], shape: slices.Clone(t.shape),
		strides: slices.Clone(t.strides)}
	v.shape[axis] = (end - start + step - 1) / step
	v.strides[axis] *= step
	return v, nil
}

func (*hostArrays) broadcastTo(t *hostArray, shape ...int) (*hostArray, error) {
	off := len(shape) - len(t.shape)
	if off < 0 {
		return nil, fmt.Errorf("broadcast %v to %v", t.shape, shape)
	}
	st := make([]int, len(shape))
	for i := range t.shape {
		switch {
		case t.shape[i] == shape[off+i]:
			st[off+i] = t.strides[i]
		case t.shape[i] == 1:
		default:
			return nil, fmt.Errorf("broadcast %v to %v", t.shape, shape)
		}
	}
	return &hostArray{data: t.data, off: t.off, shape: slices.Clone(shape), strides: st}, nil
}

func (*hostArrays) each(out, in *hostArray, f func(o, i int)) error {
	if !slices.Equal(out.shape, in.shape) {
		return fmt.Errorf("%v into %v", in.shape, out.shape)
	}
	oo, io := out.offsets(), in.offsets()
	for k := range oo {
		f(oo[k], io[k])
	}
	return nil
}

func (h *hostArrays) assign(out, in *hostArray) error {
	return h.each(out, in, func(o, i int) { out.data[o] = in.data[i] })
}

func (h *hostArrays) accumulate(out, in *hostArray) error {
	return h.each(out, in, func(o, i int) { out.data[o] += in.data[i] })
}

func (*hostArrays) fill(out *hostArray, v float32) error {
	for _, o := range out.offsets() {
		out.data[o] = v
	}
	return nil
}

func (*hostArrays) upload(out *hostArray, data []float32) error {
	if len(data) != count(out.shape) || !out.isContiguous() {
		return fmt.Errorf("upload %d values into %v", len(data), out.shape)
	}
	copy(out.data[out.off:], data)
	return nil
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

var hostBinary = map[string]func(x, y float32) float32{
	"add": func(x, y float32) float32 { return x + y }, "sub": func(x, y float32) float32 { return x - y },
	"mul": func(x, y float32) float32 { return x * y }, "div": func(x, y float32) float32 { return x / y },
	"pow": func(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) },
	"lt":  func(x, y float32) float32 { return b2f(x < y) }, "gt": func(x, y float32) float32 { return b2f(x > y) },
	"lte": func(x, y float32) float32 { return b2f(x <= y) }, "gte": func(x, y float32) float32 { return b2f(x >= y) },
	"eq": func(x, y float32) float32 { return b2f(x == y) }, "ne": func(x, y float32) float32 { return b2f(x != y) },
}

func f64(f func(float64) float64) func(float32) float32 {
	return func(x float32) float32 { return float32(f(float64(x))) }
}

var hostUnary = map[string]func(float32) float32{
	"abs": f64(math.Abs), "ceil": f64(math.Ceil), "floor": f64(math.Floor), "sin": f64(math.Sin),
	"cos": f64(math.Cos), "exp": f64(math.Exp), "log": f64(math.Log), "log2": f64(math.Log2),
	"neg": func(x float32) float32 { return -x }, "square": func(x float32) float32 { return x * x },
	"sqrt": f64(math.Sqrt), "inverse": func(x float32) float32 { return 1 / x },
	"inverse_sqrt": func(x float32) float32 { return 1 / float32(math.Sqrt(float64(x))) },
	"cube":         func(x float32) float32 { return x * x * x }, "tanh": f64(math.Tanh),
	"sigmoid": func(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) },
	"log1p":   f64(math.Log1p), "expm1": f64(math.Expm1),
	"sign": func(x float32) float32 { return b2f(x > 0) - b2f(x < 0) },
	"softplus": func(x float32) float32 {
		switch {
		case x < -103:
			return 0
		case x > 14:
			return x
		}
		return float32(math.Log1p(math.Exp(float64(x))))
	},
}

func (h *hostArrays) binary(op string, out, a, b *hostArray) error {
	f, ok := hostBinary[op]
	if !ok {
		return fmt.Errorf("no binary %q", op)
	}
	av, err := h.broadcastTo(a, out.shape...)
	if err != nil {
		return err
	}
	bv, err := h.broadcastTo(b, out.shape...)
	if err != nil {
		return err
	}
	oo, ao, bo := out.offsets(), av.offsets(), bv.offsets()
	for k := range oo {
		out.data[oo[k]] = f(a.data[ao[k]], b.data[bo[k]])
	}
	return nil
}

func (*hostArrays) unary(op string, out, a *hostArray) error {
	f, ok := hostUnary[op]
	if !ok {
		return fmt.Errorf("no unary %q", op)
	}
	oo, ao := out.offsets(), a.offsets()
	for k := range oo {
		out.data[oo[k]] = f(a.data[ao[k]])
	}
	return nil
}

// lines splits a contiguous shape around axis.
func lines(shape []int, axis int) (outer, length, inner int) {
	outer, inner = count(shape[:axis]), count(shape[axis+1:])
	return outer, shape[axis], inner
}

func (*hostArrays) reduce(max bool, out, in *hostArray, axis int) error {
	if !in.isContiguous() || !out.isContiguous() || axis >= len(in.shape) {
		return fmt.Errorf("reduce %v over %d", in.shape, axis)
	}
	outer, length, inner := lines(in.shape, axis)
	if count(out.shape) != outer*inner {
		return fmt.Errorf("reduce %v over %d into %v", in.shape, axis, out.shape)
	}
	for o := range outer {
		for i := range inner {
			acc := float32(0)
			if max {
				acc = float32(math.Inf(-1))
			}
			for k := range length {
				x := in.data[in.off+(o*length+k)*inner+i]
				if max {
					acc = float32(math.Max(float64(acc), float64(x)))
				} else {
					acc += x
				}
			}
			out.data[out.off+o*inner+i] = acc
		}
	}
	return nil
}

func (*hostArrays) softmax(out, in *hostArray, axis int, log bool) error {
	outer, length, inner := lines(in.shape, axis)
	for j := range outer * inner {
		base := (j/inner)*length*inner + j%inner
		x, y := in.data[in.off+base:], out.data[out.off+base:]
		m := x[0]
		for k := 1; k < length; k++ {
			m = float32(math.Max(float64(m), float64(x[k*inner])))
		}
		s := float32(0)
		for k := range length {
			e := float32(math.Exp(float64(x[k*inner] - m)))
			if !log {
				y[k*inner] = e
			}
			s += e
		}
		for k := range length {
			if log {
				y[k*inner] = x[k*inner] - m - float32(math.Log(float64(s)))
			} else {
				y[k*inner] *= 1 / s
			}
		}
	}
	return nil
}

func (*hostArrays) softmaxGrad(dx, y, dy *hostArray, axis int, log bool) error {
	outer, length, inner := lines(y.shape, axis)
	for j := range outer * inner {
		base := (j/inner)*length*inner + j%inner
		s := float32(0)
		for k := range length {
			i := base + k*inner
			if log {
				s += dy.data[dy.off+i]
			} else {
				s += y.data[y.off+i] * dy.data[dy.off+i]
			}
		}
		for k := range length {
			i := base + k*inner
			g, v := dy.data[dy.off+i], y.data[y.off+i]
			if log {
				dx.data[dx.off+i] = g - float32(math.Exp(float64(v)))*s
			} else {
				dx.data[dx.off+i] = v * (g - s)
			}
		}
	}
	return nil
}

func (*hostArrays) gemm(out, a, b *hostArray, transA, transB bool) error {
	batch, r := 1, len(out.shape)-2
	if r == 1 {
		batch = out.shape[0]
	}
	at := func(t *hostArray, bi, i, j int, trans bool) float32 {
		if trans {
			i, j = j, i
		}
		rows, cols := t.shape[r], t.shape[r+1]
		return t.data[t.off+bi*rows*cols+i*cols+j]
	}
	m, n := out.shape[r], out.shape[r+1]
	k := a.shape[r+1]
	if transA {
		k = a.shape[r]
	}
	for bi := range batch {
		for i := range m {
			for j := range n {
				s := float32(0)
				for l := range k {
					s += at(a, bi, i, l, transA) * at(b, bi, l, j, transB)
				}
				out.data[out.off+bi*m*n+i*n+j] = s
			}
		}
	}
	return nil
}

func (*hostArrays) dropout(out, x, mask *hostArray, keep float32) error {
	for i := range count(out.shape) {
		v := float32(0)
		if mask.data[mask.off+i] != 0 {
			v = x.data[x.off+i] / keep
		}
		out.data[out.off+i] = v
	}
	return nil
}

func (*hostArrays) dropoutGrad(dx, y, dy *hostArray, p float32) error {
	for i := range count(dx.shape) {
		v := float32(0)
		if p != 0 && y.data[y.off+i] != 0 {
			v = dy.data[dy.off+i] / p
		}
		dx.data[dx.off+i] = v
	}
	return nil
}

// hostRun evaluates every node of g through the lowering on host arrays, in topological order,
// and returns each node's value; h.live counts what the lowering left allocated beyond the nodes.
func hostRun(g *gorgonia.ExprGraph, h *hostArrays) (map[int64][]float32, error) {
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return nil, err
	}
	slices.Reverse(sorted)
	vals := map[int64]*hostArray{}
	out := map[int64][]float32{}
	for _, n := range sorted {
		if n.Op() == nil {
			var data []float32
			switch v := n.Value().(type) {
			case *tensor.Dense:
				data = slices.Clone(v.Data().([]float32))
			case *gorgonia.F32:
				data = []float32{float32(*v)}
			default:
				return nil, fmt.Errorf("input %v of type %T", n, n.Value())
			}
			vals[n.ID()] = &hostArray{data: data, shape: slices.Clone([]int(n.Shape())),
				strides: contiguous(n.Shape())}
			out[n.ID()] = data
			continue
		}
		var in []*hostArray
		for it := g.From(n.ID()); it.Next(); {
			in = append(in, vals[it.Node().ID()])
		}
		desc, err := Describe(n.Op())
		if err != nil {
			return nil, err
		}
		var v *hostArray
		if desc.Kind == KindReshape {
			if v, err = h.reshape(in[0], n.Shape()...); err != nil {
				return nil, fmt.Errorf("%v: %w", n, err)
			}
		} else {
			v, _ = h.alloc(n.Shape()...)
			h.live-- // the node's own value
			if err := lowerStandard[*hostArray](h, desc, n.Op(), v, in); err != nil {
				return nil, fmt.Errorf("%v: %w", n, err)
			}
		}
		vals[n.ID()] = v
		out[n.ID()] = v.values()
	}
	return out, nil
}
