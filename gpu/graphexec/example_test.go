package graphexec_test

import (
	"fmt"
	"log"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/gpu/graphexec"
	"github.com/gmlake/gmlake/gpu/pool"
)

// A graph written with Gorgonia's own ops, with gradients from gorgonia.Grad, trains on the GPU on
// gmlake memory: the weights stay on the device (Bind), each Run computes the loss and the
// gradients, and SGD updates the weights there. An op the GPU path cannot run is reported by
// Compile, naming the node, before anything runs.
func ExampleCompile() {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(32, 8), gorgonia.WithName("x"),
		gorgonia.WithInit(gorgonia.GlorotU(1)))
	labels := make([]float32, 32*4) // one-hot: row i is of class i % 4
	for i := range 32 {
		labels[i*4+i%4] = 1
	}
	y := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(32, 4), gorgonia.WithName("y"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(32, 4), tensor.WithBacking(labels))))
	w := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(8, 4), gorgonia.WithName("w"),
		gorgonia.WithInit(gorgonia.GlorotU(1)))
	prob := gorgonia.Must(gorgonia.SoftMax(gorgonia.Must(gorgonia.Mul(x, w))))
	loss := gorgonia.Must(gorgonia.Neg(gorgonia.Must(gorgonia.Mean(gorgonia.Must(gorgonia.HadamardProd(
		gorgonia.Must(gorgonia.Log(prob)), y))))))
	grads, err := gorgonia.Grad(loss, w)
	if err != nil {
		log.Fatal(err)
	}

	drv, err := cuda.New()
	if err != nil {
		log.Fatal(err)
	}
	defer drv.Close()
	mem, err := pool.New("gmlake", drv, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer mem.Close()
	d, err := gpu.New(gpu.WithAllocator(mem))
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	m, err := graphexec.Compile(d, g, graphexec.WithOutputs(loss, grads[0]))
	if err != nil {
		log.Fatal(err) // errors.As gives a *graphexec.UnsupportedOpError for an op with no GPU lowering
	}
	defer m.Close()
	wt, err := d.FromHost(w.Value().Data().([]float32), 8, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer wt.Free()
	if err := m.Bind(w, wt); err != nil {
		log.Fatal(err)
	}
	for range 10 {
		if err := m.Run(); err != nil { // x and y are uploaded from their nodes' values at each Run
			log.Fatal(err)
		}
		gw, err := m.Tensor(grads[0])
		if err != nil {
			log.Fatal(err)
		}
		if err := d.Axpy(wt, gw, -0.1); err != nil {
			log.Fatal(err)
		}
	}
	l, err := m.Value(loss)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("loss %.4f\n", l[0])
}
