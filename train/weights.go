package train

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train/vm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// deviceWeights keeps a model's tensors in allocator memory, as a GPU trainer keeps them on the
// device. Weights.Tensors is switched to the device copies, so every graph Build binds them; Close
// copies them back to the Go heap so the Weights stay usable.
type deviceWeights struct {
	w     *models.Weights
	alloc vm.Allocator
	from  map[*tensor.Dense]*tensor.Dense // heap tensor -> its device copy
	mem   map[*tensor.Dense]tensorMemory  // device copy -> its block
}

func newDeviceWeights(w *models.Weights, alloc vm.Allocator) (*deviceWeights, error) {
	d := &deviceWeights{w: w, alloc: alloc, from: make(map[*tensor.Dense]*tensor.Dense), mem: make(map[*tensor.Dense]tensorMemory)}
	return d, d.upload()
}

// upload moves every tensor of w not yet in allocator memory there (in name order, so the
// trace is reproducible).
func (d *deviceWeights) upload() error {
	names := make([]string, 0, len(d.w.Tensors))
	for name := range d.w.Tensors {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		host := d.w.Tensors[name]
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
		d.w.Tensors[name] = dev
	}
	return nil
}

// bind uploads tensors Build added (LoRA adapters) and points g's weight nodes at device copies.
func (d *deviceWeights) bind(g *models.Graph) error {
	if err := d.upload(); err != nil {
		return err
	}
	for _, n := range append(append([]*gorgonia.Node(nil), g.Params...), g.Frozen...) {
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
	for name, dev := range d.w.Tensors {
		mem, ok := d.mem[dev]
		if !ok {
			continue
		}
		host := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(dev.Shape().Clone()...))
		copy(host.Data().([]float32), dev.Data().([]float32))
		d.w.Tensors[name] = host
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
