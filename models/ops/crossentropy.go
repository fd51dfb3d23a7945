package ops

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// crossEntropy is the causal language-model loss with Hugging Face's
// convention: logits [Batch*Seq, V] at position s predict ids[b, s+1], and
// the loss is the mean of -log softmax over the Batch*(Seq-1) predicted
// tokens. Softmax and log are fused (log-sum-exp), so no probability tensor
// is materialized in the forward pass. With grad set it computes
// d loss/d logits = (softmax - onehot)·dloss/N from (logits, ids, dloss),
// with zero rows at each sequence's last position.
type crossEntropy struct {
	batch, seq int
	grad       bool
}

// CrossEntropy returns the mean next-token cross-entropy (a float32 scalar)
// of logits [batch*seq, V] against ids [batch, seq] (tensor.Int), the labels
// being the ids shifted left by one. seq must be at least 2.
func CrossEntropy(logits, ids *gorgonia.Node, batch, seq int) (*gorgonia.Node, error) {
	if seq < 2 {
		return nil, fmt.Errorf("%w: cross-entropy needs sequences of at least 2 tokens, got %d", ErrInput, seq)
	}
	return apply(crossEntropy{batch: batch, seq: seq}, logits, ids)
}

func (k crossEntropy) String() string {
	return fmt.Sprintf("CrossEntropy{b=%d,s=%d,grad=%t}", k.batch, k.seq, k.grad)
}

func (k crossEntropy) signature() ([]argType, argType) {
	if k.grad {
		return []argType{f32(2), ints(2), f32(0)}, f32(2)
	}
	return []argType{f32(2), ints(2)}, f32(0)
}

func (k crossEntropy) outShape(in []tensor.Shape) (tensor.Shape, error) {
	logits, ids := in[0], in[1]
	if len(logits) != 2 || logits[0] != k.batch*k.seq || !ids.Eq(tensor.Shape{k.batch, k.seq}) {
		return nil, fmt.Errorf("%w: %v: logits %v, ids %v", ErrInput, k, logits, ids)
	}
	if k.grad {
		return logits.Clone(), nil
	}
	return tensor.ScalarShape(), nil
}

func (k crossEntropy) forward(out []float32, in []*tensor.Dense) error {
	logits, ids := data(in[0]), intData(in[1])
	v := in[0].Shape()[1]
	n := float64(k.batch * (k.seq - 1))
	var dloss float64
	if k.grad {
		dloss = float64(scalar(in[2]))
	}
	var total float64
	for b := 0; b < k.batch; b++ {
		for s := 0; s < k.seq; s++ {
			r := b*k.seq + s
			row := logits[r*v : (r+1)*v]
			if s == k.seq-1 {
				if k.grad {
					clear(out[r*v : (r+1)*v])
				}
				continue
			}
			label := ids[r+1]
			if label < 0 || label >= v {
				return fmt.Errorf("%w: %v: label %d outside [0, %d)", ErrInput, k, label, v)
			}
			max, lse := logSumExp(row)
			if !k.grad {
				total += lse - float64(row[label])
				continue
			}
			o := out[r*v : (r+1)*v]
			for j, x := range row {
				o[j] = float32(math.Exp(float64(x)-max-(lse-max)) * dloss / n)
			}
			o[label] -= float32(dloss / n)
		}
	}
	if !k.grad {
		out[0] = float32(total / n)
	}
	return nil
}

// logSumExp returns the row's maximum and log Σ exp(row).
func logSumExp(row []float32) (max, lse float64) {
	max = math.Inf(-1)
	for _, x := range row {
		if float64(x) > max {
			max = float64(x)
		}
	}
	var sum float64
	for _, x := range row {
		sum += math.Exp(float64(x) - max)
	}
	return max, max + math.Log(sum)
}

func (k crossEntropy) diffWRT() []bool {
	if k.grad {
		return []bool{false, false, false}
	}
	return []bool{true, false}
}

func (k crossEntropy) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	d, err := apply(crossEntropy{batch: k.batch, seq: k.seq, grad: true}, in[0], in[1], g)
	return gorgonia.Nodes{d, nil}, err
}
