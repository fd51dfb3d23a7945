package graphexec

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"gorgonia.org/gorgonia"
)

// ErrUnsupported is wrapped by errors about ops the GPU path does not implement.
var ErrUnsupported = errors.New("graphexec: op not supported on the GPU")

// Kind says what an op computes.
type Kind int

// The op kinds of the models' graphs.
const (
	KindAdd          Kind = iota // models/ops Add, Gorgonia's gradient sum "+": a + b, same shapes
	KindMul                      // a ⊙ b
	KindScale                    // C · x
	KindAddBias                  // x [N, F] + b [F]
	KindSumRows                  // Σ over rows of x [N, F] -> [F]
	KindActivation               // GELU (tanh) or SiLU, or its gradient (x, dy)
	KindMatMul                   // op(a) · op(b)
	KindNorm                     // LayerNorm/RMSNorm: forward, dx or dγ (Part)
	KindRoPE                     // rotary embedding, or its inverse (the gradient)
	KindEmbedding                // gather rows by ids, or scatter-add (Grad)
	KindPositions                // learned positions broadcast over the batch, or their gradient
	KindAttention                // one of the causal attention parts (Part)
	KindCrossEntropy             // mean next-token cross-entropy, or its gradient
	KindReshape                  // a view of the input with the node's shape
	KindConstant                 // a constant: a scalar (the loss seed 1, a known size) or a tensor (Data)
)

var kindNames = map[Kind]string{KindAdd: "add", KindMul: "mul", KindScale: "scale", KindAddBias: "add_bias",
	KindSumRows: "sum_rows", KindActivation: "activation", KindMatMul: "matmul", KindNorm: "norm", KindRoPE: "rope",
	KindEmbedding: "embedding", KindPositions: "positions", KindAttention: "attention",
	KindCrossEntropy: "cross_entropy", KindReshape: "reshape", KindConstant: "constant"}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "unknown"
}

// Attention is the shape of one attention layer (models/ops.AttentionShape).
type Attention struct {
	Batch, Seq, Heads, KVHeads, HeadDim int
	Packed                              bool
}

// Desc is an op's kind with its parameters; fields not used by a kind are zero.
type Desc struct {
	Kind     Kind
	Name     string  // activation: "gelu_new" or "silu"
	Backward bool    // activation gradient; RoPE inverse
	Grad     bool    // embedding, positions, cross-entropy gradient
	TransA   bool    // matmul
	TransB   bool    // matmul
	C        float32 // scale factor; the constant's value
	RMS      bool    // norm
	Eps      float64 // norm
	Part     int     // norm: 0 forward, 1 dx, 2 dγ; attention: models/ops attnPart
	Rows     int     // embedding and positions: table rows
	Batch    int     // positions, cross-entropy
	Seq      int     // positions, cross-entropy, RoPE
	Heads    int     // RoPE
	HeadDim  int     // RoPE
	Theta    float64 // RoPE
	Attn     Attention

	Data  []float32 // a tensor constant's values
	Axes  []int     // sum, max: the reduced axes
	Axis  int       // softmax (as Gorgonia gives it, -1 the default), slice, concat, repeat, size
	Perm  []int     // transpose
	Start int       // slice
	End   int       // slice
	Step  int       // slice
	All   bool      // slice gradient: the whole axis
	Log   bool      // log-softmax
	Prob  float64   // dropout: the drop probability
	CNN   *CNN      // the convolutional kinds' parameters (describe_cnn.go)
}

// Attention parts, as models/ops numbers them.
const (
	AttnProbs = iota
	AttnContext
	AttnContextGradP
	AttnContextGradV
	AttnSoftmaxGrad
	AttnScoresGradQ
	AttnScoresGradK
)

type pattern struct {
	re    *regexp.Regexp
	parse func(m []string) (Desc, error)
}

var (
	num   = `(-?[0-9.e+-]+|[+-]?Inf|NaN)`
	tf    = `(true|false)`
	forms = []pattern{
		{regexp.MustCompile(`^Add\{\d+\}$`), fixed(Desc{Kind: KindAdd})},
		{regexp.MustCompile(`^Mul\{\d+\}$`), fixed(Desc{Kind: KindMul})},
		{regexp.MustCompile(`^AddBias$`), fixed(Desc{Kind: KindAddBias})},
		{regexp.MustCompile(`^SumRows$`), fixed(Desc{Kind: KindSumRows})},
		{regexp.MustCompile(`^Scale\{\d+,` + num + `\}$`), func(m []string) (Desc, error) {
			c, err := strconv.ParseFloat(m[1], 32)
			return Desc{Kind: KindScale, C: float32(c)}, err
		}},
		{regexp.MustCompile(`^Activation\{(gelu_new|silu),\d+,backward=` + tf + `\}$`), func(m []string) (Desc, error) {
			return Desc{Kind: KindActivation, Name: m[1], Backward: m[2] == "true"}, nil
		}},
		{regexp.MustCompile(`^MatMul\{tA=` + tf + `,tB=` + tf + `\}$`), func(m []string) (Desc, error) {
			return Desc{Kind: KindMatMul, TransA: m[1] == "true", TransB: m[2] == "true"}, nil
		}},
		{regexp.MustCompile(`^Norm\{rms=` + tf + `,eps=` + num + `,part=([012])\}$`), func(m []string) (Desc, error) {
			eps, err := strconv.ParseFloat(m[2], 64)
			return Desc{Kind: KindNorm, RMS: m[1] == "true", Eps: eps, Part: atoi(m[3])}, err
		}},
		{regexp.MustCompile(`^RoPE\{s=(\d+),h=(\d+),d=(\d+),theta=` + num + `,inv=` + tf + `\}$`), func(m []string) (Desc, error) {
			theta, err := strconv.ParseFloat(m[4], 64)
			return Desc{Kind: KindRoPE, Seq: atoi(m[1]), Heads: atoi(m[2]), HeadDim: atoi(m[3]), Theta: theta,
				Backward: m[5] == "true"}, err
		}},
		{regexp.MustCompile(`^Embedding\{grad=` + tf + `,rows=(\d+)\}$`), func(m []string) (Desc, error) {
			return Desc{Kind: KindEmbedding, Grad: m[1] == "true", Rows: atoi(m[2])}, nil
		}},
		{regexp.MustCompile(`^Positions\{b=(\d+),s=(\d+),rows=(\d+),grad=` + tf + `\}$`), func(m []string) (Desc, error) {
			return Desc{Kind: KindPositions, Batch: atoi(m[1]), Seq: atoi(m[2]), Rows: atoi(m[3]), Grad: m[4] == "true"}, nil
		}},
		{regexp.MustCompile(`^CrossEntropy\{b=(\d+),s=(\d+),grad=` + tf + `\}$`), func(m []string) (Desc, error) {
			return Desc{Kind: KindCrossEntropy, Batch: atoi(m[1]), Seq: atoi(m[2]), Grad: m[3] == "true"}, nil
		}},
		{regexp.MustCompile(`^Attention\{b=(\d+),s=(\d+),h=(\d+),kv=(\d+),d=(\d+),packed=` + tf + `,part=([0-6])\}$`),
			func(m []string) (Desc, error) {
				a := Attention{Batch: atoi(m[1]), Seq: atoi(m[2]), Heads: atoi(m[3]), KVHeads: atoi(m[4]),
					HeadDim: atoi(m[5]), Packed: m[6] == "true"}
				if a.KVHeads == 0 || a.Heads%a.KVHeads != 0 {
					return Desc{}, fmt.Errorf("%w: attention with %d heads over %d kv heads", ErrUnsupported, a.Heads, a.KVHeads)
				}
				return Desc{Kind: KindAttention, Attn: a, Part: atoi(m[7])}, nil
			}},
	}
)

func fixed(d Desc) func([]string) (Desc, error) {
	return func([]string) (Desc, error) { return d, nil }
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s) // the patterns admit digits only
	return n
}

// Describe says what op computes, or returns an error wrapping ErrUnsupported (for an op it does
// not know, an *UnsupportedOpError naming it).
func Describe(op gorgonia.Op) (Desc, error) {
	if c, ok := op.(interface{ Value() gorgonia.Value }); ok {
		return describeConstant(op, c.Value())
	}
	if d, ok, err := describeStandard(op); ok {
		return d, err
	}
	s := op.String()
	switch typ := fmt.Sprintf("%T", op); typ {
	case "ops.op":
		for _, p := range forms {
			if m := p.re.FindStringSubmatch(s); m != nil {
				d, err := p.parse(m)
				if err != nil {
					return Desc{}, fmt.Errorf("%w: %q: %w", ErrUnsupported, s, err)
				}
				return d, nil
			}
		}
		return Desc{}, unsupported(op, "unknown models/ops op")
	default:
		return Desc{}, unsupported(op, "no GPU lowering for this op")
	}
}
