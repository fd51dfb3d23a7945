package train

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gmlake/gmlake/train/vm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// deviceWeights keeps a model's tensors (models.Weights.Tensors or models.ResNetWeights.Tensors)
// in allocator memory, as a GPU trainer keeps them on the device. The map is switched to the
// device copies, so every graph Build binds them; Close copies them back to the Go heap so the
// weights stay usable.
type deviceWeights struct {
	tensors map[string]*tensor.Dense
	alloc   vm.Allocator
	from    map[*tensor.Dense]*tensor.Dense // heap tensor -> its device copy
	mem     map[*tensor.Dense]tensorMemory  // device copy -> its block
}

func newDeviceWeights(tensors map[string]*tensor.Dense, alloc vm.Allocator) (*deviceWeights, error) {
	d := &deviceWeights{tensors: tensors, alloc: alloc, from: make(map[*tensor.Dense]*tensor.Dense), mem: make(map[*tensor.Dense]tensorMemory)}
	return d, d.upload()
}

// upload moves every tensor not yet in allocator memory there (in name order, so the
// trace is reproducible).
func (d *deviceWeights) upload() error {
	names := make([]string, 0, len(d.tensors))
	for name := range d.tensors {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		host := d.tensors[name]
		if _, onDevice := d.mem[host]; onDevice {
			continue
		}
		if host.Dtype() != tensor.Float32 {
			return fmt.Errorf("train: weight %s is %v, want float32", name, host.Dtype())
		}
		dev, mem, err := newDeviceTensor(d.alloc, host.Shape())
		if err != nil {
			return fmt.Errorf("train: upload %s: %w", name, err)
		}
		copy(dev.Data().([]float32), host.Data().([]float32))
		d.from[host], d.mem[dev] = dev, mem
		d.tensors[name] = dev
	}
	return nil
}

// bind uploads tensors Build added (LoRA adapters) and points a graph's weight nodes at device
// copies.
func (d *deviceWeights) bind(nodes []*gorgonia.Node) error {
	if err := d.upload(); err != nil {
		return err
	}
	for _, n := range nodes {
		host, ok := n.Value().(*tensor.Dense)
		if !ok {
			return fmt.Errorf("train: weight node %v has no tensor bound", n)
		}
		if dev, ok := d.from[host]; ok {
			if err := gorgonia.Let(n, dev); err != nil {
				return fmt.Errorf("train: bind %v: %w", n, err)
			}
		}
	}
	return nil
}

// Close copies the weights back to the Go heap and frees their device copies.
func (d *deviceWeights) Close() error {
	var errs []error
	for name, dev := range d.tensors {
		mem, ok := d.mem[dev]
		if !ok {
			continue
		}
		host := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(dev.Shape().Clone()...))
		copy(host.Data().([]float32), dev.Data().([]float32))
		d.tensors[name] = host
		errs = append(errs, d.alloc.Free(mem.mem, mem.size))
		delete(d.mem, dev)
	}
	return errors.Join(errs...)
}

// bytes is the size of the weights in allocator memory.
func (d *deviceWeights) bytes() int64 {
	var n int64
	for _, m := range d.mem {
		n += m.size
	}
	return n
}
