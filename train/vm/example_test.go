package vm_test

import (
	"fmt"
	"log"

	"github.com/gmlake/gmlake"
	"github.com/gmlake/gmlake/train/vm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A Machine runs a Gorgonia graph with every buffer in gmlake's stitched memory, returning each to
// the allocator at its last use; the outputs stay until the next run or Release.
func Example() {
	alloc, err := gmlake.NewAllocator()
	if err != nil {
		log.Fatal(err)
	}
	defer alloc.Close()

	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(2, 3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{1, 2, 3, 4, 5, 6}))))
	w := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(3, 1), gorgonia.WithName("w"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3, 1), tensor.WithBacking([]float32{0.5, -1, 0.25}))))
	loss := gorgonia.Must(gorgonia.Mean(gorgonia.Must(gorgonia.Square(gorgonia.Must(gorgonia.Mul(x, w))))))
	grads, err := gorgonia.Grad(loss, w)
	if err != nil {
		log.Fatal(err)
	}

	m, err := vm.New(g, alloc, vm.WithOutputs(loss, grads[0]), vm.WithForward(loss))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("loss:", m.Value(loss))
	fmt.Println("dloss/dw:", m.Value(grads[0]).Data())
	fmt.Println("bytes held for the outputs:", alloc.Stats().LiveBytes) // the gradient; the scalar loss is a Go value
	if err := m.Release(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("bytes held after Release:", alloc.Stats().LiveBytes)
	// Output:
	// loss: 1.40625
	// dloss/dw: [-6.75 -9 -11.25]
	// bytes held for the outputs: 12
	// bytes held after Release: 0
}
