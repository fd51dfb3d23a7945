package gmlake_test

import (
	"fmt"
	"log"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake"
	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/train/vm"
)

// An allocator with Gorgonia's cuda.Arena method set, on the default driver: GPU memory on a
// machine with a GPU, real host memory otherwise.
func ExampleNewAllocator() {
	a, err := gmlake.NewAllocator(gmlake.WithCapacity(64 << 20))
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()

	mem, err := a.Get(3 << 20)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("live bytes:", a.Stats().LiveBytes)
	a.Put(mem, 3<<20)
	fmt.Println("live bytes:", a.Stats().LiveBytes, "check:", a.Check())
	// Output:
	// live bytes: 3145728
	// live bytes: 0 check: <nil>
}

// Tensors whose memory comes from gmlake; results of arithmetic on them do too. The tensor engine
// computes on the CPU, so it needs host memory: the host driver.
func ExampleNewTensorEngine() {
	d, err := host.New()
	if err != nil {
		log.Fatal(err)
	}
	e, err := gmlake.NewTensorEngine(gmlake.WithDriver(d), gmlake.WithCapacity(64<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer e.Allocator().Close()

	x := tensor.New(tensor.WithEngine(e), tensor.Of(tensor.Float32), tensor.WithShape(2, 2))
	copy(x.Data().([]float32), []float32{1, 2, 3, 4})
	y, err := tensor.Add(x, x)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(y.Data(), "gmlake blocks:", e.Allocator().Stats().LiveBlocks)
	// Output:
	// [2 4 6 8] gmlake blocks: 2
}

// Training a graph of one's own on gmlake memory, the short form of examples/quickstart: the
// gradients gorgonia.Grad adds are computed without being listed, and Gorgonia's solvers take the
// learnables through ValueGrads. train/vm computes on the CPU, so the memory is host memory.
func Example_training() {
	alloc, err := gmlake.NewAllocator(gmlake.WithHostMemory(), gmlake.WithJobSize(16<<10))
	if err != nil {
		log.Fatal(err)
	}
	defer alloc.Close()

	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(4, 2), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float32{0, 0, 0, 1, 1, 0, 1, 1}))))
	want := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(4, 1), gorgonia.WithName("want"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(4, 1), tensor.WithBacking([]float32{0, 1, 1, 2}))))
	w := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(2, 1), gorgonia.WithName("w"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2, 1), tensor.WithBacking([]float32{0.1, -0.2}))))
	loss := gorgonia.Must(gorgonia.Mean(gorgonia.Must(gorgonia.Square(gorgonia.Must(gorgonia.Sub(gorgonia.Must(gorgonia.Mul(x, w)), want))))))
	if _, err := gorgonia.Grad(loss, w); err != nil {
		log.Fatal(err)
	}

	m, err := vm.New(g, alloc)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	solver := gorgonia.NewVanillaSolver(gorgonia.WithLearnRate(0.1))
	for step := range 100 {
		if err := m.RunAll(); err != nil {
			log.Fatal(err)
		}
		if step == 0 || step == 99 {
			fmt.Printf("step %d: loss %.4f\n", step+1, m.Value(loss).Data())
		}
		if err := solver.Step(m.ValueGrads(w)); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("w = %.2f\n", w.Value().Data())
	// Output:
	// step 1: loss 1.6650
	// step 100: loss 0.0000
	// w = [1.00 1.00]
}
