package models

import (
	"fmt"
	"math"
	"math/rand"
	"sort"

	"gorgonia.org/tensor"
)

// ResNetBlock is the residual block of a ResNet.
type ResNetBlock string

// The two blocks of He et al. (2015).
const (
	BasicBlock      ResNetBlock = "basic"      // two 3×3 convolutions (ResNet-18/34)
	BottleneckBlock ResNetBlock = "bottleneck" // 1×1, 3×3, 1×1 with 4× expansion (ResNet-50/101/152)
)

// ResNetConfig describes a ResNet as torchvision builds it: a 7×7 stride-2 stem convolution
// with batch norm, ReLU and a 3×3 stride-2 max pool; stages of residual blocks whose widths
// double from Width while the resolution halves (the first block of every stage after the first
// strides by 2, in the 3×3 convolution for bottlenecks, and projects its shortcut with a 1×1
// convolution and batch norm when the shape changes); a global average pool and a linear head.
// Convolutions have no bias.
type ResNetConfig struct {
	Block      ResNetBlock
	Layers     []int // residual blocks per stage
	Width      int   // channels of the first stage's 3×3 convolutions (64 in torchvision)
	Classes    int
	InChannels int     // image channels (3)
	Eps        float64 // batch norm ε (1e-5)
}

// Errors about ResNet configurations and graph shapes.
var ErrResNetConfig = fmt.Errorf("%w: resnet", ErrInvalidConfig)

// ResNetPreset returns a named configuration: "resnet18", "resnet34", "resnet50" (torchvision's,
// 1000 classes), or "resnet-tiny" (basic blocks, width 8, two stages, 10 classes: for tests).
func ResNetPreset(name string) (ResNetConfig, error) {
	base := ResNetConfig{Width: 64, Classes: 1000, InChannels: 3, Eps: 1e-5}
	switch name {
	case "resnet18":
		base.Block, base.Layers = BasicBlock, []int{2, 2, 2, 2}
	case "resnet34":
		base.Block, base.Layers = BasicBlock, []int{3, 4, 6, 3}
	case "resnet50":
		base.Block, base.Layers = BottleneckBlock, []int{3, 4, 6, 3}
	case "resnet-tiny":
		base.Block, base.Layers, base.Width, base.Classes = BasicBlock, []int{1, 1}, 8, 10
	default:
		return ResNetConfig{}, fmt.Errorf("%w: unknown preset %q", ErrResNetConfig, name)
	}
	return base, nil
}

// Validate checks that c describes a buildable network.
func (c ResNetConfig) Validate() error {
	if c.Block != BasicBlock && c.Block != BottleneckBlock {
		return fmt.Errorf("%w: block %q", ErrResNetConfig, c.Block)
	}
	if len(c.Layers) == 0 || c.Width <= 0 || c.Classes <= 0 || c.InChannels <= 0 || c.Eps <= 0 {
		return fmt.Errorf("%w: %+v", ErrResNetConfig, c)
	}
	for _, n := range c.Layers {
		if n <= 0 {
			return fmt.Errorf("%w: a stage of %d blocks", ErrResNetConfig, n)
		}
	}
	return nil
}

func (c ResNetConfig) expansion() int {
	if c.Block == BottleneckBlock {
		return 4
	}
	return 1
}

// Features is the width of the last stage, the input of the linear head.
func (c ResNetConfig) Features() int {
	return c.Width << (len(c.Layers) - 1) * c.expansion()
}

// convSpec is one convolution of the network with the batch norm after it: the weight's name,
// the batch norm's name prefix (torchvision's: "conv1.weight" and "bn1", "layer1.0.conv2.weight"
// and "layer1.0.bn2", "layer2.0.downsample.0.weight" and "layer2.0.downsample.1"), shape and
// geometry.
type convSpec struct {
	name, bn    string
	in, out, k  int
	stride, pad int
}

func (s convSpec) shape() []int { return []int{s.out, s.in, s.k, s.k} }

// resBlock is one residual block's convolutions (each followed by a batch norm) and its
// optional shortcut projection.
type resBlock struct {
	convs []convSpec
	down  *convSpec // 1×1 projection of the shortcut, or nil for the identity
}

func (c ResNetConfig) stem() convSpec {
	return convSpec{name: "conv1.weight", bn: "bn1", in: c.InChannels, out: c.Width, k: 7, stride: 2, pad: 3}
}

// blocks lists every residual block in order.
func (c ResNetConfig) blocks() []resBlock {
	var out []resBlock
	in := c.Width
	for stage, n := range c.Layers {
		width := c.Width << stage
		for b := range n {
			stride := 1
			if b == 0 && stage > 0 {
				stride = 2
			}
			name := fmt.Sprintf("layer%d.%d", stage+1, b)
			conv := func(i, cin, cout, k, s, p int) convSpec {
				return convSpec{name: fmt.Sprintf("%s.conv%d.weight", name, i), bn: fmt.Sprintf("%s.bn%d", name, i),
					in: cin, out: cout, k: k, stride: s, pad: p}
			}
			var rb resBlock
			outC := width * c.expansion()
			if c.Block == BasicBlock {
				rb.convs = []convSpec{conv(1, in, width, 3, stride, 1), conv(2, width, width, 3, 1, 1)}
			} else {
				rb.convs = []convSpec{conv(1, in, width, 1, 1, 0), conv(2, width, width, 3, stride, 1), conv(3, width, outC, 1, 1, 0)}
			}
			if stride != 1 || in != outC {
				rb.down = &convSpec{name: name + ".downsample.0.weight", bn: name + ".downsample.1", in: in, out: outC, k: 1, stride: stride, pad: 0}
			}
			out = append(out, rb)
			in = outC
		}
	}
	return out
}

// resnetSpecs lists every parameter of c: convolution weights, batch norm γ ("<bn>.weight")
// and β ("<bn>.bias"), and the head ("fc.weight" [Classes, Features], nn.Linear's layout, and
// "fc.bias").
func resnetSpecs(c ResNetConfig) []paramSpec {
	var specs []paramSpec
	add := func(s convSpec) {
		specs = append(specs, paramSpec{name: s.name, shape: s.shape(), init: initKaiming},
			paramSpec{name: s.bn + ".weight", shape: []int{s.out}, init: initOnes},
			paramSpec{name: s.bn + ".bias", shape: []int{s.out}, init: initZeros})
	}
	add(c.stem())
	for _, b := range c.blocks() {
		for _, s := range b.convs {
			add(s)
		}
		if b.down != nil {
			add(*b.down)
		}
	}
	specs = append(specs, paramSpec{name: "fc.weight", shape: []int{c.Classes, c.Features()}, init: initUniformFanIn},
		paramSpec{name: "fc.bias", shape: []int{c.Classes}, init: initUniformFanIn})
	return specs
}

// ResNetWeights holds a ResNet's parameters under torchvision's names. Graphs of every input
// size bind these tensors.
type ResNetWeights struct {
	Config  ResNetConfig
	Tensors map[string]*tensor.Dense
}

// Params is the number of trainable parameters (torchvision's count: batch-norm running
// statistics are not parameters).
func (w *ResNetWeights) Params() int {
	n := 0
	for _, t := range w.Tensors {
		n += t.Shape().TotalSize()
	}
	return n
}

// Names lists the parameter names in sorted order.
func (w *ResNetWeights) Names() []string {
	names := make([]string, 0, len(w.Tensors))
	for name := range w.Tensors {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// InitResNet creates freshly initialized weights for c as torchvision does: convolutions
// Kaiming-normal with fan-out (std √(2/(K·R·S))), batch norm γ = 1 and β = 0, the head
// uniform in ±1/√Features. Tensors are allocated through eng (nil: the Go heap); the same seed
// gives the same weights.
func InitResNet(c ResNetConfig, seed int64, eng tensor.Engine) (*ResNetWeights, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewSource(seed))
	w := &ResNetWeights{Config: c, Tensors: make(map[string]*tensor.Dense)}
	for _, s := range resnetSpecs(c) {
		t, err := newTensor(eng, s.shape...)
		if err != nil {
			return nil, err
		}
		d := float32s(t)
		switch s.init {
		case initKaiming:
			std := math.Sqrt(2 / float64(s.shape[0]*s.shape[2]*s.shape[3]))
			for i := range d {
				d[i] = float32(rng.NormFloat64() * std)
			}
		case initUniformFanIn:
			bound := 1 / math.Sqrt(float64(c.Features()))
			for i := range d {
				d[i] = float32((rng.Float64()*2 - 1) * bound)
			}
		default:
			fill(d, s.init, rng)
		}
		w.Tensors[s.name] = t
	}
	return w, nil
}
