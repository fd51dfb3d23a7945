package ops

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// classCrossEntropy is the classification loss: the mean over N rows of −log softmax(logits
// [N, K]) at each row's label (labels [N], tensor.Int, in [0, K)). With grad set it computes
// d loss/d logits = (softmax − onehot)·dloss/N from (logits, labels, dloss).
type classCrossEntropy struct {
	grad bool
}

// ClassCrossEntropy returns the mean softmax cross-entropy (a float32 scalar) of logits [N, K]
// against integer labels [N].
func ClassCrossEntropy(logits, labels *gorgonia.Node) (*gorgonia.Node, error) {
	return apply(classCrossEntropy{}, logits, labels)
}

func (k classCrossEntropy) String() string { return fmt.Sprintf("ClassCrossEntropy{grad=%t}", k.grad) }

func (k classCrossEntropy) signature() ([]argType, argType) {
	if k.grad {
		return []argType{f32(2), ints(1), f32(0)}, f32(2)
	}
	return []argType{f32(2), ints(1)}, f32(0)
}

func (k classCrossEntropy) outShape(in []tensor.Shape) (tensor.Shape, error) {
	logits, labels := in[0], in[1]
	if len(logits) != 2 || !labels.Eq(tensor.Shape{logits[0]}) {
		return nil, fmt.Errorf("%w: %v: logits %v, labels %v", ErrInput, k, logits, labels)
	}
	if k.grad {
		return logits.Clone(), nil
	}
	return tensor.ScalarShape(), nil
}

func (k classCrossEntropy) forward(out []float32, in []*tensor.Dense) error {
	logits, labels := data(in[0]), intData(in[1])
	rows, v := in[0].Shape()[0], in[0].Shape()[1]
	var dloss float64
	if k.grad {
		dloss = float64(scalar(in[2]))
	}
	var total float64
	for r, label := range labels {
		if label < 0 || label >= v {
			return fmt.Errorf("%w: %v: label %d outside [0, %d)", ErrInput, k, label, v)
		}
		row := logits[r*v : (r+1)*v]
		max, lse := logSumExp(row)
		if !k.grad {
			total += lse - float64(row[label])
			continue
		}
		o := out[r*v : (r+1)*v]
		for j, x := range row {
			o[j] = float32(math.Exp(float64(x)-max-(lse-max)) * dloss / float64(rows))
		}
		o[label] -= float32(dloss / float64(rows))
	}
	if !k.grad {
		out[0] = float32(total / float64(rows))
	}
	return nil
}

func (k classCrossEntropy) diffWRT() []bool {
	if k.grad {
		return []bool{false, false, false}
	}
	return []bool{true, false}
}

func (k classCrossEntropy) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	d, err := apply(classCrossEntropy{grad: true}, in[0], in[1], g)
	return gorgonia.Nodes{d, nil}, err
}
