package gmlake_test

import (
	"fmt"
	"log"

	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake"
)

// An allocator with Gorgonia's cuda.Arena method set. Without -tags cuda it allocates real host
// memory through the host driver.
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

// Tensors whose memory comes from gmlake; results of arithmetic on them do too.
func ExampleNewEngine() {
	e, err := gmlake.NewEngine(gmlake.WithCapacity(64 << 20))
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
