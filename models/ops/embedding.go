package ops

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// embedding gathers table rows: out[b*Seq+s] = table[ids[b,s]]. With grad
// set it is the table's gradient instead: a scatter-add of dy rows into a
// zeroed [rows, F] matrix, from inputs (ids, dy).
type embedding struct {
	grad bool
	rows int // table rows (vocabulary size); used by the gradient
}

// Embedding looks up the rows of table [V, F] for ids ([Batch, Seq],
// tensor.Int) and returns them as [Batch*Seq, F]. Ids outside [0, V) are
// an error at run time.
func Embedding(ids, table *gorgonia.Node) (*gorgonia.Node, error) {
	return apply(embedding{rows: table.Shape()[0]}, ids, table)
}

func (k embedding) String() string { return fmt.Sprintf("Embedding{grad=%t,rows=%d}", k.grad, k.rows) }

func (k embedding) signature() ([]argType, argType) {
	return []argType{ints(2), f32(2)}, f32(2)
}

func (k embedding) outShape(in []tensor.Shape) (tensor.Shape, error) {
	ids, t := in[0], in[1]
	if len(ids) != 2 || len(t) != 2 {
		return nil, fmt.Errorf("%w: %v: ids %v, table %v", ErrInput, k, ids, t)
	}
	if k.grad {
		if t[0] != ids.TotalSize() {
			return nil, fmt.Errorf("%w: %v: dy %v does not match ids %v", ErrInput, k, t, ids)
		}
		return tensor.Shape{k.rows, t[1]}, nil
	}
	return tensor.Shape{ids.TotalSize(), t[1]}, nil
}

func (k embedding) forward(out []float32, in []*tensor.Dense) error {
	ids, src := intData(in[0]), data(in[1])
	f := in[1].Shape()[1]
	if k.grad {
		clear(out)
	}
	for i, id := range ids {
		if id < 0 || id >= k.rows {
			return fmt.Errorf("%w: %v: token id %d outside [0, %d)", ErrInput, k, id, k.rows)
		}
		if k.grad {
			dst, row := out[id*f:(id+1)*f], src[i*f:(i+1)*f]
			for j, v := range row {
				dst[j] += v
			}
		} else {
			copy(out[i*f:(i+1)*f], src[id*f:(id+1)*f])
		}
	}
	return nil
}

func (k embedding) diffWRT() []bool { return []bool{false, !k.grad} }

func (k embedding) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	d, err := apply(embedding{grad: true, rows: k.rows}, in[0], g)
	return gorgonia.Nodes{nil, d}, err
}

// positions broadcasts rows 0..Seq-1 of a learned position table [P, F] over
// the batch: out[b*Seq+s] = table[s]. With grad set it sums dy [Batch*Seq, F]
// over the batch into a zeroed [P, F] matrix.
type positions struct {
	batch, seq int
	grad       bool
	rows       int // P, used by the gradient
}

// Positions returns the first seq rows of table, repeated for each of batch
// sequences, as [batch*seq, F] (GPT-2's learned position embeddings).
func Positions(table *gorgonia.Node, batch, seq int) (*gorgonia.Node, error) {
	if seq > table.Shape()[0] {
		return nil, fmt.Errorf("%w: sequence length %d exceeds the %d learned positions", ErrInput, seq, table.Shape()[0])
	}
	return apply(positions{batch: batch, seq: seq, rows: table.Shape()[0]}, table)
}

func (k positions) String() string {
	return fmt.Sprintf("Positions{b=%d,s=%d,rows=%d,grad=%t}", k.batch, k.seq, k.rows, k.grad)
}

func (k positions) signature() ([]argType, argType) { return []argType{f32(2)}, f32(2) }

func (k positions) outShape(in []tensor.Shape) (tensor.Shape, error) {
	if len(in[0]) != 2 {
		return nil, fmt.Errorf("%w: %v wants a matrix, got %v", ErrInput, k, in[0])
	}
	if k.grad {
		return tensor.Shape{k.rows, in[0][1]}, nil
	}
	return tensor.Shape{k.batch * k.seq, in[0][1]}, nil
}

func (k positions) forward(out []float32, in []*tensor.Dense) error {
	src := data(in[0])
	f := in[0].Shape()[1]
	if k.grad {
		clear(out)
	}
	for b := 0; b < k.batch; b++ {
		for s := 0; s < k.seq; s++ {
			tok := (b*k.seq + s) * f
			if k.grad {
				dst := out[s*f : (s+1)*f]
				for j, v := range src[tok : tok+f] {
					dst[j] += v
				}
			} else {
				copy(out[tok:tok+f], src[s*f:(s+1)*f])
			}
		}
	}
	return nil
}

func (k positions) diffWRT() []bool { return []bool{!k.grad} }

func (k positions) grads(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	gk := k
	gk.grad = true
	d, err := apply(gk, g)
	return gorgonia.Nodes{d}, err
}
