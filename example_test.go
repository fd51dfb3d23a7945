package gmlake_test

import (
	"fmt"
	"log"

	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake"
	"github.com/gmlake/gmlake/driver/host"
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
