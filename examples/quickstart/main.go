// Quickstart trains a classifier written with Gorgonia's own ops on gmlake memory: every
// activation, gradient and temporary of a training step comes from a stitching allocator over real
// host memory and goes back to it at its last use (train/vm), with per-block recomputation and
// activation offload on, and Gorgonia's Adam updates the weights.
//
//	go run ./examples/quickstart
//
// The task: points in the plane drawn around three centres, in minibatches; the net learns which
// centre a point came from.
package main

import (
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake"
	"github.com/gmlake/gmlake/train/vm"
)

const (
	batch   = 32
	hidden  = 32
	classes = 3
)

func main() {
	if _, err := run(os.Stdout, 300); err != nil {
		log.Fatal(err)
	}
}

// result is what a run measured.
type result struct {
	FirstLoss, LastLoss float32
	Accuracy            float64 // mean over the last 50 minibatches, before each update
	Fragmentation       float64
	LiveAfterClose      uint64
}

func run(w io.Writer, steps int) (result, error) {
	// Host memory, because the CPU computes on it; a job this small wants small chunks.
	alloc, err := gmlake.NewAllocator(gmlake.WithHostMemory(), gmlake.WithJobSize(64<<10))
	if err != nil {
		return result{}, err
	}
	defer alloc.Close()

	// The model: softmax(relu(x·W1 + b1)·W2 + b2), mean cross-entropy against one-hot labels.
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(batch, 2), G.WithName("x"), G.WithInit(G.Zeroes()))
	y := G.NewMatrix(g, tensor.Float32, G.WithShape(batch, classes), G.WithName("y"), G.WithInit(G.Zeroes()))
	w1 := G.NewMatrix(g, tensor.Float32, G.WithShape(2, hidden), G.WithName("w1"), G.WithInit(G.GlorotU(1)))
	b1 := G.NewVector(g, tensor.Float32, G.WithShape(hidden), G.WithName("b1"), G.WithInit(G.Zeroes()))
	w2 := G.NewMatrix(g, tensor.Float32, G.WithShape(hidden, classes), G.WithName("w2"), G.WithInit(G.GlorotU(1)))
	b2 := G.NewVector(g, tensor.Float32, G.WithShape(classes), G.WithName("b2"), G.WithInit(G.Zeroes()))
	learnables := G.Nodes{w1, b1, w2, b2}

	h := G.Must(G.Rectify(G.Must(G.BroadcastAdd(G.Must(G.Mul(x, w1)), b1, nil, []byte{0}))))
	logits := G.Must(G.BroadcastAdd(G.Must(G.Mul(h, w2)), b2, nil, []byte{0}))
	probs := G.Must(G.SoftMax(logits))
	picked := G.Must(G.HadamardProd(G.Must(G.Log(probs)), y))
	loss := G.Must(G.Div(G.Must(G.Neg(G.Must(G.Sum(picked)))), G.NewConstant(float32(batch))))
	if _, err := G.Grad(loss, learnables...); err != nil {
		return result{}, err
	}

	// The machine computes the gradients G.Grad added; x and h are where the two layers begin.
	m, err := vm.New(g, alloc, vm.WithOutputs(loss, probs),
		vm.WithBlockBoundaries(x, h), vm.WithRecompute(true), vm.WithOffload(true))
	if err != nil {
		return result{}, err
	}
	solver := G.NewAdamSolver(G.WithLearnRate(0.05))
	rng := rand.New(rand.NewPCG(1, 2))
	var res result
	for step := 1; step <= steps; step++ {
		xs, ys, labels := minibatch(rng)
		if err := G.Let(x, xs); err != nil {
			return res, err
		}
		if err := G.Let(y, ys); err != nil {
			return res, err
		}
		if err := m.RunAll(); err != nil {
			return res, err
		}
		l := m.Value(loss).Data().(float32)
		if step == 1 {
			res.FirstLoss = l
		}
		res.LastLoss = l
		acc := accuracy(m.Value(probs).Data().([]float32), labels)
		if step > steps-50 {
			res.Accuracy += acc / float64(min(steps, 50))
		}
		if err := solver.Step(m.ValueGrads(learnables...)); err != nil {
			return res, err
		}
		if step == 1 || step%50 == 0 {
			st := alloc.Stats()
			fmt.Fprintf(w, "step %3d  loss %.4f  accuracy %.2f  gmlake: %d B live, %d B reserved\n",
				step, l, acc, st.LiveBytes, st.ReservedBytes)
		}
	}
	ms := m.Stats()
	if err := m.Close(); err != nil {
		return res, err
	}
	st := alloc.Stats()
	res.Fragmentation, res.LiveAfterClose = st.Fragmentation(), st.LiveBytes
	fmt.Fprintf(w, "peak live %d B, peak reserved %d B (fragmentation %.3f), %d driver calls; %d steps recomputed, %d B offloaded\n",
		st.PeakLiveBytes, st.PeakReservedBytes, res.Fragmentation, st.TotalDriverCalls(), ms.Recomputed, ms.OffloadedBytes)
	return res, alloc.Check()
}

// centres of the three classes.
var centres = [classes][2]float32{{-1, -1}, {1, -0.5}, {0, 1.2}}

// minibatch draws batch points, each around a random centre, with one-hot labels.
func minibatch(rng *rand.Rand) (xs, ys *tensor.Dense, labels []int) {
	xd := make([]float32, batch*2)
	yd := make([]float32, batch*classes)
	labels = make([]int, batch)
	for i := range batch {
		c := rng.IntN(classes)
		labels[i] = c
		xd[2*i] = centres[c][0] + float32(rng.NormFloat64()*0.4)
		xd[2*i+1] = centres[c][1] + float32(rng.NormFloat64()*0.4)
		yd[i*classes+c] = 1
	}
	return tensor.New(tensor.WithShape(batch, 2), tensor.WithBacking(xd)),
		tensor.New(tensor.WithShape(batch, classes), tensor.WithBacking(yd)), labels
}

// accuracy is the share of rows whose most probable class is the label.
func accuracy(probs []float32, labels []int) float64 {
	right := 0
	for i, want := range labels {
		best := 0
		for c := 1; c < classes; c++ {
			if probs[i*classes+c] > probs[i*classes+best] {
				best = c
			}
		}
		if best == want {
			right++
		}
	}
	return float64(right) / float64(len(labels))
}
