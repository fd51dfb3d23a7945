package graphexec

import (
	"regexp"
	"strconv"

	"github.com/gmlake/gmlake/gpu/cudnn"
)

// The op kinds of the convolutional networks (models.BuildResNet), lowered to cuDNN
// (lower_cnn.go). Numbered apart from the other kinds (describe.go, describe_standard.go) so each list can grow.
const (
	KindConv              Kind = 200 + iota // Conv2d: forward, backward-data or backward-filter (Part)
	KindBatchNorm                           // training-mode batch norm: forward, dx, dγ or dβ (Part)
	KindReLU                                // rectifier, or its gradient (x, dy)
	KindPool                                // max or average pooling, or its gradient (x, y, dy)
	KindGlobalAvgPool                       // [N, C, H, W] -> [N, C] mean, or its gradient
	KindClassCrossEntropy                   // mean softmax cross-entropy over labelled rows, or its gradient
)

// CNN holds the parameters of the convolutional kinds (Desc.CNN).
type CNN struct {
	Conv     cudnn.ConvGeometry
	Pool     cudnn.PoolGeometry
	Eps      float64
	H, W     int // global average pool
	Backward bool
}

func init() {
	for k, name := range map[Kind]string{KindConv: "conv", KindBatchNorm: "batch_norm", KindReLU: "relu",
		KindPool: "pool", KindGlobalAvgPool: "global_avg_pool", KindClassCrossEntropy: "class_cross_entropy"} {
		kindNames[k] = name
	}
	dims := `(\d+)x(\d+)`
	forms = append(forms,
		pattern{regexp.MustCompile(`^Conv2d\{x=(\d+)x(\d+)x(\d+)x(\d+),w=(\d+)x(\d+)x(\d+)x(\d+),stride=` + dims +
			`,pad=` + dims + `,part=([012])\}$`), func(m []string) (Desc, error) {
			g := cudnn.ConvGeometry{N: atoi(m[1]), C: atoi(m[2]), H: atoi(m[3]), W: atoi(m[4]), K: atoi(m[5]),
				R: atoi(m[7]), S: atoi(m[8]), StrideH: atoi(m[9]), StrideW: atoi(m[10]), PadH: atoi(m[11]), PadW: atoi(m[12])}
			return Desc{Kind: KindConv, Part: atoi(m[13]), CNN: &CNN{Conv: g}}, nil
		}},
		pattern{regexp.MustCompile(`^BatchNorm\{eps=` + num + `,part=([0-3])\}$`), func(m []string) (Desc, error) {
			eps, err := strconv.ParseFloat(m[1], 64)
			return Desc{Kind: KindBatchNorm, Part: atoi(m[2]), CNN: &CNN{Eps: eps}}, err
		}},
		pattern{regexp.MustCompile(`^ReLU\{\d+,backward=` + tf + `\}$`), func(m []string) (Desc, error) {
			return Desc{Kind: KindReLU, CNN: &CNN{Backward: m[1] == "true"}}, nil
		}},
		pattern{regexp.MustCompile(`^Pool\{max=` + tf + `,x=(\d+)x(\d+)x(\d+)x(\d+),window=` + dims + `,stride=` + dims +
			`,pad=` + dims + `,backward=` + tf + `\}$`), func(m []string) (Desc, error) {
			g := cudnn.PoolGeometry{X: cudnn.Shape{N: atoi(m[2]), C: atoi(m[3]), H: atoi(m[4]), W: atoi(m[5])},
				R: atoi(m[6]), S: atoi(m[7]), StrideH: atoi(m[8]), StrideW: atoi(m[9]), PadH: atoi(m[10]), PadW: atoi(m[11]),
				Max: m[1] == "true"}
			return Desc{Kind: KindPool, CNN: &CNN{Pool: g, Backward: m[12] == "true"}}, nil
		}},
		pattern{regexp.MustCompile(`^GlobalAvgPool\{h=(\d+),w=(\d+),backward=` + tf + `\}$`), func(m []string) (Desc, error) {
			return Desc{Kind: KindGlobalAvgPool, CNN: &CNN{H: atoi(m[1]), W: atoi(m[2]), Backward: m[3] == "true"}}, nil
		}},
		pattern{regexp.MustCompile(`^ClassCrossEntropy\{grad=` + tf + `\}$`), func(m []string) (Desc, error) {
			return Desc{Kind: KindClassCrossEntropy, Grad: m[1] == "true"}, nil
		}},
	)
}
