package graphexec

import (
	"errors"
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// arrays is what the lowering of Gorgonia's standard ops computes with: float32 arrays with
// shapes and strides, views of them, and a few primitive kernels. The Machine's implementation
// runs them on the Device; the tests' runs them on host slices, so that the lowering itself (views,
// axes, broadcasting, the order of reductions) is checked against Gorgonia on any machine.
type arrays[T any] interface {
	shape(t T) []int
	alloc(shape ...int) (T, error)
	free(t T) error
	reshape(t T, shape ...int) (T, error)              // a view of a contiguous array
	permute(t T, perm ...int) (T, error)               // a view, axis i of it axis perm[i] of t
	narrow(t T, axis, start, end, step int) (T, error) // a view of every step-th element in [start, end) along axis
	broadcastTo(t T, shape ...int) (T, error)          // a view under numpy's rules (stride 0)
	assign(out, in T) error                            // out = in, both views of one shape
	accumulate(out, in T) error                        // out += in, as assign
	fill(out T, v float32) error
	upload(out T, data []float32) error
	binary(op string, out, a, b T) error // out = a op b, numpy broadcasting
	unary(op string, out, a T) error
	reduce(max bool, out, in T, axis int) error // sum (or max) over axis of a contiguous array
	softmax(out, in T, axis int, log bool) error
	softmaxGrad(dx, y, dy T, axis int, log bool) error
	gemm(out, a, b T, transA, transB bool) error // 2-D, or 3-D batched over the first axis
	dropout(out, x, mask T, keep float32) error
	dropoutGrad(dx, y, dy T, p float32) error
}

// isStandard reports whether desc's op is lowered by lowerStandard (Gorgonia's own ops and
// constants; reshapes are views the executor makes).
func isStandard(k Kind) bool { return k >= KindBinary || k == KindMatMul || k == KindConstant }

// lowerStandard computes op (described by desc) into out, a fresh contiguous array of the node's
// shape, from its inputs.
func lowerStandard[T any](a arrays[T], desc Desc, op gorgonia.Op, out T, in []T) error {
	switch desc.Kind {
	case KindConstant:
		if desc.Data != nil {
			return a.upload(out, desc.Data)
		}
		return a.fill(out, desc.C)
	case KindBinary:
		return a.binary(desc.Name, out, in[0], in[1])
	case KindUnary:
		return a.unary(desc.Name, out, in[0])
	case KindMatMul:
		return a.gemm(out, in[0], in[1], desc.TransA, desc.TransB)
	case KindBatchedMatMul:
		return batchedMatMul(a, desc, out, in[0], in[1])
	case KindMatVec: // op(A) · x as op(A) · x[k, 1]
		return gemmViews(a, out, []int{len1(a, out), 1}, in[0], nil, in[1], []int{len1(a, in[1]), 1}, desc.TransA, false)
	case KindVecDot: // a[1, k] · b[k, 1]
		return gemmViews(a, out, []int{1, 1}, in[0], []int{1, len1(a, in[0])}, in[1], []int{len1(a, in[1]), 1}, false,
			false)
	case KindOuter: // a[m, 1] · b[1, n]
		return gemmViews(a, out, nil, in[0], []int{len1(a, in[0]), 1}, in[1], []int{1, len1(a, in[1])}, false, false)
	case KindSum, KindMax:
		return reduceAxes(a, desc.Kind == KindMax, out, in[0], desc.Axes)
	case KindSoftmax:
		return a.softmax(out, in[0], softmaxAxis(a.shape(in[0]), desc.Axis), desc.Log)
	case KindSoftmaxGrad: // inputs (x, y, dy); Gorgonia's backward resolves the axis without the vector rule
		return a.softmaxGrad(out, in[1], in[2], resolveAxis(desc.Axis, len(a.shape(in[1]))), desc.Log)
	case KindTranspose:
		v, err := a.permute(in[0], desc.Perm...)
		if err != nil {
			return err
		}
		return a.assign(out, v)
	case KindSlice:
		v, err := a.narrow(in[0], desc.Axis, desc.Start, min(desc.End, a.shape(in[0])[desc.Axis]), desc.Step)
		if err != nil {
			return err
		}
		o, err := a.reshape(out, a.shape(v)...) // a single index drops the axis from the node's shape
		if err != nil {
			return err
		}
		return a.assign(o, v)
	case KindSliceGrad:
		return sliceGrad(a, desc, out, in[1])
	case KindConcat:
		return concat(a, desc.Axis, out, in)
	case KindRepeat:
		return repeat(a, desc.Axis, out, in[0])
	case KindSize:
		s := a.shape(in[0])
		size := 1
		if len(s) > 0 {
			if desc.Axis >= len(s) {
				return fmt.Errorf("%w: size of axis %d of %v", ErrUnsupported, desc.Axis, s)
			}
			size = s[desc.Axis]
		}
		return a.fill(out, float32(size))
	case KindDropout:
		return dropout(a, desc, op, out, in[0])
	case KindDropoutGrad: // inputs (x, y, dy)
		return a.dropoutGrad(out, in[1], in[2], float32(desc.Prob))
	}
	return &UnsupportedOpError{Type: fmt.Sprintf("%T", op), Op: op.String(), Reason: "kind " + desc.Kind.String()}
}

func len1[T any](a arrays[T], t T) int {
	n := 1
	for _, s := range a.shape(t) {
		n *= s
	}
	return n
}

// gemmViews runs gemm on views of out, x and y reshaped as given (nil: as they are).
func gemmViews[T any](a arrays[T], out T, os []int, x T, xs []int, y T, ys []int, transA, transB bool) error {
	view := func(t T, s []int) (T, error) {
		if s == nil {
			return t, nil
		}
		return a.reshape(t, s...)
	}
	o, err := view(out, os)
	if err != nil {
		return err
	}
	xv, err := view(x, xs)
	if err != nil {
		return err
	}
	yv, err := view(y, ys)
	if err != nil {
		return err
	}
	return a.gemm(o, xv, yv, transA, transB)
}

// batchedMatMul folds every axis but the last two into one batch axis.
func batchedMatMul[T any](a arrays[T], desc Desc, out, x, y T) error {
	fold := func(t T) []int {
		s := a.shape(t)
		if len(s) < 3 {
			return nil
		}
		b := 1
		for _, d := range s[:len(s)-2] {
			b *= d
		}
		return []int{b, s[len(s)-2], s[len(s)-1]}
	}
	fo, fx, fy := fold(out), fold(x), fold(y)
	if fo == nil || fx == nil || fy == nil {
		return fmt.Errorf("%w: batched matmul of %v and %v", ErrUnsupported, a.shape(x), a.shape(y))
	}
	return gemmViews(a, out, fo, x, fx, y, fy, desc.TransA, desc.TransB)
}

// reduceAxes reduces in over axes into out (in's shape without them), one run of adjacent axes
// at a time from the last, each run merged into one axis.
func reduceAxes[T any](a arrays[T], max bool, out, in T, axes []int) (err error) {
	axes = slices.Clone(axes)
	slices.Sort(axes)
	axes = slices.Compact(axes)
	cur, shape := in, slices.Clone(a.shape(in))
	var temps []T
	defer func() {
		for _, t := range temps {
			err = errors.Join(err, a.free(t))
		}
	}()
	for len(axes) > 0 {
		hi := len(axes) - 1
		lo := hi
		for lo > 0 && axes[lo-1] == axes[lo]-1 {
			lo--
		}
		first, last := axes[lo], axes[hi]
		if first < 0 || last >= len(shape) {
			return fmt.Errorf("%w: reduction over axes %v of %v", ErrUnsupported, axes, shape)
		}
		merged := 1
		for _, s := range shape[first : last+1] {
			merged *= s
		}
		view := slices.Concat(shape[:first], []int{merged}, shape[last+1:])
		v, err := a.reshape(cur, view...)
		if err != nil {
			return err
		}
		shape = slices.Concat(shape[:first], shape[last+1:])
		axes = axes[:lo]
		dst := out
		if len(axes) > 0 {
			if dst, err = a.alloc(shape...); err != nil {
				return err
			}
			temps = append(temps, dst)
		} else if dst, err = a.reshape(out, shape...); err != nil {
			return err
		}
		if err := a.reduce(max, dst, v, first); err != nil {
			return err
		}
		cur = dst
	}
	return nil
}

// softmaxAxis is the axis Gorgonia's softmaxOp uses for input shape s: the last, or 0 for a
// column vector, or the op's own; negative axes count from the end.
func softmaxAxis(s []int, axis int) int {
	shape := tensor.Shape(s)
	a := len(s) - 1
	if shape.IsColVec() || (shape.IsVector() && !shape.IsRowVec()) {
		a = 0
	}
	if axis != -1 {
		a = axis
	}
	return resolveAxis(a, len(s))
}

// resolveAxis is tensor's: axis modulo dims, negative from the end.
func resolveAxis(axis, dims int) int {
	if dims == 0 {
		return 0
	}
	r := axis % dims
	if r < 0 {
		r += dims
	}
	return r
}

// sliceGrad: zeros of the node's shape, the slice of which gets incr added (Gorgonia's
// sliceIncrOp, the gradient of a slice).
func sliceGrad[T any](a arrays[T], desc Desc, out, incr T) error {
	if err := a.fill(out, 0); err != nil {
		return err
	}
	v := out
	if !desc.All {
		var err error
		s := a.shape(out)
		if desc.Axis >= len(s) {
			return fmt.Errorf("%w: slice of axis %d of %v", ErrUnsupported, desc.Axis, s)
		}
		if v, err = a.narrow(out, desc.Axis, desc.Start, min(desc.End, s[desc.Axis]), desc.Step); err != nil {
			return err
		}
	}
	iv, err := fitTo(a, incr, a.shape(v))
	if err != nil {
		return err
	}
	return a.accumulate(v, iv)
}

// fitTo views t with shape s: a reshape when the counts agree (an index that dropped an axis),
// else a broadcast (a scalar increment).
func fitTo[T any](a arrays[T], t T, s []int) (T, error) {
	n := 1
	for _, d := range s {
		n *= d
	}
	if len1(a, t) == n {
		return a.reshape(t, s...)
	}
	return a.broadcastTo(t, s...)
}

func concat[T any](a arrays[T], axis int, out T, in []T) error {
	s := a.shape(out)
	if axis >= len(s) {
		return fmt.Errorf("%w: concat along axis %d of %v", ErrUnsupported, axis, s)
	}
	off := 0
	for _, t := range in {
		ts := a.shape(t)
		if len(ts) != len(s) {
			return fmt.Errorf("%w: concat of %v into %v", ErrUnsupported, ts, s)
		}
		v, err := a.narrow(out, axis, off, off+ts[axis], 1)
		if err != nil {
			return err
		}
		if err := a.assign(v, t); err != nil {
			return err
		}
		off += ts[axis]
	}
	if off != s[axis] {
		return fmt.Errorf("%w: concat of %d along axis %d into %v", ErrUnsupported, off, axis, s)
	}
	return nil
}

// repeat: each element of x repeated along axis (tensor.Repeat), as x viewed with a size-1 axis
// after axis, broadcast to the repeat count. A scalar is a one-element vector.
func repeat[T any](a arrays[T], axis int, out, x T) error {
	s, os := slices.Clone(a.shape(x)), a.shape(out)
	if len(s) == 0 {
		s = []int{1}
	}
	if len(s) != len(os) || axis >= len(s) || s[axis] == 0 || os[axis]%s[axis] != 0 {
		return fmt.Errorf("%w: repeat of %v along axis %d into %v", ErrUnsupported, a.shape(x), axis, os)
	}
	rep := os[axis] / s[axis]
	inner := slices.Concat(s[:axis+1], []int{1}, s[axis+1:])
	wide := slices.Concat(s[:axis+1], []int{rep}, s[axis+1:])
	xv, err := a.reshape(x, inner...)
	if err != nil {
		return err
	}
	if xv, err = a.broadcastTo(xv, wide...); err != nil {
		return err
	}
	ov, err := a.reshape(out, wide...)
	if err != nil {
		return err
	}
	return a.assign(ov, xv)
}

// dropout draws the mask with the graph's own op (its random source, on the host: the op run on
// ones gives 1/keep where it keeps an element) and applies it.
func dropout[T any](a arrays[T], desc Desc, op gorgonia.Op, out, x T) (err error) {
	s := a.shape(x)
	ones := make([]float32, len1(a, x))
	for i := range ones {
		ones[i] = 1
	}
	v, err := op.Do(tensor.New(tensor.WithShape(s...), tensor.WithBacking(ones)))
	if err != nil {
		return fmt.Errorf("dropout mask: %w", err)
	}
	data, ok := v.Data().([]float32)
	if !ok || len(data) != len(ones) {
		return fmt.Errorf("%w: dropout mask of type %T", ErrUnsupported, v.Data())
	}
	mask, err := a.alloc(s...)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, a.free(mask)) }()
	if err := a.upload(mask, data); err != nil {
		return err
	}
	return a.dropout(out, x, mask, float32(1.0-desc.Prob))
}
