package graphexec

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The kinds of Gorgonia's own ops (package gorgonia), which users build graphs from, and of the
// ops gorgonia.Grad adds for their gradients.
const (
	KindBinary        Kind = iota + 100 // elementwise a OP b (Name), a scalar operand broadcast; comparisons give 1 or 0
	KindUnary                           // elementwise OP(x) (Name)
	KindBatchedMatMul                   // op(a) · op(b) per batch item over the leading axes
	KindMatVec                          // op(A) · x, x a vector
	KindVecDot                          // a · b of two vectors, a scalar
	KindOuter                           // a ⊗ b of two vectors
	KindSum                             // Σ over Axes
	KindMax                             // max over Axes
	KindSoftmax                         // softmax (or log-softmax, Log) along Axis
	KindSoftmaxGrad                     // its gradient from (x, y, dy)
	KindTranspose                       // axes permuted by Perm
	KindSlice                           // Start:End:Step along Axis
	KindSliceGrad                       // zeros of x's shape with the slice Start:End:Step along Axis += the second input
	KindConcat                          // inputs joined along Axis
	KindRepeat                          // each element repeated along Axis (numpy repeat; a broadcast for size-1 axes)
	KindSize                            // the size of the input along Axis, as a scalar
	KindDropout                         // x / (1-Prob) where the op's own random draw keeps it, else 0
	KindDropoutGrad                     // Gorgonia's dropout gradient: dy / Prob where y ≠ 0, else 0
)

func init() {
	for k, name := range map[Kind]string{KindBinary: "binary", KindUnary: "unary", KindBatchedMatMul: "batched_matmul",
		KindMatVec: "matvec", KindVecDot: "vecdot", KindOuter: "outer", KindSum: "sum", KindMax: "max",
		KindSoftmax: "softmax", KindSoftmaxGrad: "softmax_grad", KindTranspose: "transpose", KindSlice: "slice",
		KindSliceGrad: "slice_grad", KindConcat: "concat", KindRepeat: "repeat", KindSize: "size",
		KindDropout: "dropout", KindDropoutGrad: "dropout_grad"} {
		kindNames[k] = name
	}
}

// UnsupportedOpError says which op the GPU path cannot run and why. It matches ErrUnsupported
// (errors.Is); errors.As gives the op.
type UnsupportedOpError struct {
	Node   string // the node's name, when the op was met in a graph
	Type   string // the op's Go type, e.g. "gorgonia.elemBinOp"
	Op     string // the op's String()
	Reason string
}

func (e *UnsupportedOpError) Error() string {
	s := ErrUnsupported.Error() + ": "
	if e.Node != "" {
		s += "node " + e.Node + ": "
	}
	s += fmt.Sprintf("%s %q", e.Type, e.Op)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is makes errors.Is(err, ErrUnsupported) hold.
func (e *UnsupportedOpError) Is(target error) bool { return target == ErrUnsupported }

func unsupported(op gorgonia.Op, format string, args ...any) error {
	return &UnsupportedOpError{Type: fmt.Sprintf("%T", op), Op: op.String(), Reason: fmt.Sprintf(format, args...)}
}

// Gorgonia's operator names (ʘBinOpStrs, ʘUnaryOpStrs) and the kernels that compute them.
var (
	binaryNames = map[string]string{"+": "add", "-": "sub", "⊙": "mul", "÷": "div", "^": "pow",
		"<": "lt", ">": "gt", "<=": "lte", ">=": "gte", "==": "eq", "!=": "ne"}
	unaryNames = map[string]string{"abs": "abs", "sign": "sign", "ceil": "ceil", "floor": "floor", "sin": "sin",
		"cos": "cos", "exp": "exp", "ln": "log", "log2": "log2", "neg": "neg", "square": "square", "sqrt": "sqrt",
		"inv": "inverse", "invSqrt": "inverse_sqrt", "cube": "cube", "tanh": "tanh", "sigmoid": "sigmoid",
		"log1p": "log1p", "expm1": "expm1", "softplus": "softplus"}
	comparisons = map[string]bool{"lt": true, "gt": true, "lte": true, "gte": true, "eq": true, "ne": true}

	elemBinForm = regexp.MustCompile(`^(\S+) (true|false)$`)
	linAlgForm  = regexp.MustCompile(`^([Aa])(ᵀ?) (×××|×|⋅|⊗) ([Bb])(ᵀ?)$`)
	axesForm    = regexp.MustCompile(`^(?:Σ|MaxAlong)\[([0-9 ]*)\]$`)
	softmaxForm = regexp.MustCompile(`^Softmax(Diff)?\{(-?\d+), (true|false)\}\(\)$`)
	permForm    = regexp.MustCompile(`^Aᵀ\{([0-9, ]*)\}$`)
	sliceForm   = regexp.MustCompile(`^T\[((?::, )*)(?:(\d+):(\d+):(\d+)|:)\.\.\.\](\+=\.\.\.)?$`)
	concatForm  = regexp.MustCompile(`^Concat\(axis=(\d+)\)$`)
	repeatForm  = regexp.MustCompile(`^Repeat(\d+)$`)
	sizeForm    = regexp.MustCompile(`^SizeOf(?:=(\d+)|\((\d+)\))$`)
)

// describeStandard describes the ops of package gorgonia; ok is false for ops of other packages.
// Parameters are read from String(), which Gorgonia prints them in, except the dropout
// probability, which only the op's field holds.
func describeStandard(op gorgonia.Op) (d Desc, ok bool, err error) {
	typ := fmt.Sprintf("%T", op)
	if !strings.HasPrefix(strings.TrimPrefix(typ, "*"), "gorgonia.") {
		return Desc{}, false, nil
	}
	s := op.String()
	switch strings.TrimPrefix(typ, "*") {
	case "gorgonia.reshapeOp":
		return Desc{Kind: KindReshape}, true, nil
	case "gorgonia.elemBinOp":
		m := elemBinForm.FindStringSubmatch(s)
		if m == nil || binaryNames[m[1]] == "" {
			return Desc{}, true, unsupported(op, "unknown elementwise operator")
		}
		name := binaryNames[m[1]]
		if comparisons[name] && m[2] != "true" {
			return Desc{}, true, unsupported(op, "a comparison with a boolean result (use retSame)")
		}
		return Desc{Kind: KindBinary, Name: name}, true, nil
	case "gorgonia.elemUnaryOp":
		name, known := unaryNames[s]
		if !known {
			return Desc{}, true, unsupported(op, "unknown elementwise function")
		}
		return Desc{Kind: KindUnary, Name: name}, true, nil
	case "gorgonia.linAlgBinOp":
		m := linAlgForm.FindStringSubmatch(s)
		if m == nil {
			return Desc{}, true, unsupported(op, "unknown linear algebra operator")
		}
		d := Desc{TransA: m[2] != "", TransB: m[5] != ""}
		switch {
		case m[3] == "×××":
			d.Kind = KindBatchedMatMul
		case m[3] == "×" && m[4] == "B":
			d.Kind = KindMatMul
		case m[3] == "×":
			d.Kind = KindMatVec
		case m[3] == "⋅":
			d.Kind = KindVecDot
		default:
			d.Kind = KindOuter
		}
		return d, true, nil
	case "gorgonia.sumOp", "gorgonia.maxOp":
		m := axesForm.FindStringSubmatch(s)
		if m == nil {
			return Desc{}, true, unsupported(op, "unparsed reduction axes")
		}
		d := Desc{Kind: KindSum}
		if strings.HasPrefix(s, "Max") {
			d.Kind = KindMax
		}
		for _, f := range strings.Fields(m[1]) {
			d.Axes = append(d.Axes, atoi(f))
		}
		return d, true, nil
	case "gorgonia.softmaxOp", "gorgonia.softmaxDiffOp":
		m := softmaxForm.FindStringSubmatch(s)
		if m == nil {
			return Desc{}, true, unsupported(op, "unparsed softmax")
		}
		axis, _ := strconv.Atoi(m[2])
		d := Desc{Kind: KindSoftmax, Axis: axis, Log: m[3] == "true"}
		if m[1] != "" {
			d.Kind = KindSoftmaxGrad
		}
		return d, true, nil
	case "gorgonia.transposeOp":
		m := permForm.FindStringSubmatch(s)
		if m == nil {
			return Desc{}, true, unsupported(op, "unparsed permutation")
		}
		d := Desc{Kind: KindTranspose}
		for _, f := range strings.Split(m[1], ",") {
			d.Perm = append(d.Perm, atoi(strings.TrimSpace(f)))
		}
		return d, true, nil
	case "gorgonia.sliceOp", "gorgonia.sliceIncrOp":
		m := sliceForm.FindStringSubmatch(s)
		if m == nil {
			return Desc{}, true, unsupported(op, "unparsed slice")
		}
		d := Desc{Kind: KindSlice, Axis: strings.Count(m[1], ":"), Step: 1}
		if m[5] != "" {
			d.Kind = KindSliceGrad
		}
		if m[2] == "" || atoi(m[3]) <= atoi(m[2]) { // Gorgonia's all(): the whole axis
			d.All = true
		} else {
			d.Start, d.End, d.Step = atoi(m[2]), atoi(m[3]), atoi(m[4])
		}
		if d.Kind == KindSlice && d.All {
			return Desc{Kind: KindReshape}, true, nil // the whole tensor: a view
		}
		if d.Step == 0 { // a single index (tensor's ss) has step 0
			d.Step = 1
		}
		if d.Step < 1 {
			return Desc{}, true, unsupported(op, "slice step %d", d.Step)
		}
		return d, true, nil
	case "gorgonia.concatOp":
		m := concatForm.FindStringSubmatch(s)
		if m == nil {
			return Desc{}, true, unsupported(op, "unparsed concat")
		}
		return Desc{Kind: KindConcat, Axis: atoi(m[1])}, true, nil
	case "gorgonia.repeatOp":
		m := repeatForm.FindStringSubmatch(s)
		if m == nil {
			return Desc{}, true, unsupported(op, "unparsed repeat")
		}
		return Desc{Kind: KindRepeat, Axis: atoi(m[1])}, true, nil
	case "gorgonia.sizeOp":
		m := sizeForm.FindStringSubmatch(s)
		if m == nil {
			return Desc{}, true, unsupported(op, "unparsed size")
		}
		if m[1] != "" { // the size is known: the constant
			return Desc{Kind: KindConstant, C: float32(atoi(m[1]))}, true, nil
		}
		return Desc{Kind: KindSize, Axis: atoi(m[2])}, true, nil
	case "gorgonia.dropoutOp", "gorgonia.dropoutDiffOp":
		p, training, err := dropoutParams(op)
		if err != nil {
			return Desc{}, true, unsupported(op, "%v", err)
		}
		if strings.HasSuffix(typ, "DiffOp") {
			return Desc{Kind: KindDropoutGrad, Prob: p}, true, nil
		}
		if p == 0 || !training { // Gorgonia returns the input itself
			return Desc{Kind: KindReshape}, true, nil
		}
		return Desc{Kind: KindDropout, Prob: p}, true, nil
	}
	return Desc{}, true, unsupported(op, "no GPU lowering for this op")
}

// dropoutParams reads the drop probability and training flag of Gorgonia's dropout op (or of the
// op its gradient embeds): unexported fields, read by reflection since String() omits them.
func dropoutParams(op gorgonia.Op) (p float64, training bool, err error) {
	v := reflect.Indirect(reflect.ValueOf(op))
	if f := v.FieldByName("dropoutOp"); f.IsValid() {
		v = reflect.Indirect(f)
	}
	prob, train := v.FieldByName("probability"), v.FieldByName("isTraining")
	if !v.IsValid() || prob.Kind() != reflect.Float64 || train.Kind() != reflect.Bool {
		return 0, false, errors.New("dropout op without probability and isTraining fields")
	}
	return prob.Float(), train.Bool(), nil
}

// describeConstant describes a constant op (scalar or tensor) of float32 values.
func describeConstant(op gorgonia.Op, v gorgonia.Value) (Desc, error) {
	switch data := v.Data().(type) {
	case float32:
		return Desc{Kind: KindConstant, C: data}, nil
	case []float32:
		if _, ok := v.(*tensor.Dense); !ok {
			return Desc{}, unsupported(op, "constant of type %T", v)
		}
		return Desc{Kind: KindConstant, Data: data}, nil
	}
	return Desc{}, unsupported(op, "constant of type %T (the GPU path runs float32)", v.Data())
}

// CheckGraph describes every op node of g and checks that it computes float32, returning every
// node the GPU path cannot run (each an *UnsupportedOpError, matching ErrUnsupported) joined
// into one error. Compile runs it before anything else; it needs no GPU.
func CheckGraph(g *gorgonia.ExprGraph) error {
	var errs []error
	for _, n := range g.AllNodes() {
		if n.Op() == nil {
			continue
		}
		_, err := Describe(n.Op())
		var ue *UnsupportedOpError
		switch {
		case errors.As(err, &ue):
			ue.Node = n.Name()
			errs = append(errs, ue)
		case err != nil:
			errs = append(errs, fmt.Errorf("node %v: %w", n.Name(), err))
		case n.Dtype() != tensor.Float32:
			errs = append(errs, &UnsupportedOpError{Node: n.Name(), Type: fmt.Sprintf("%T", n.Op()), Op: n.Op().String(),
				Reason: fmt.Sprintf("dtype %v (the GPU path runs float32)", n.Dtype())})
		}
	}
	return errors.Join(errs...)
}
