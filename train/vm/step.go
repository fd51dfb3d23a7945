package vm

import (
	"errors"
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/train/plan"
)

func (m *Machine) step(in *plan.Step) error {
	switch in.Op {
	case plan.Exec:
		if in.Recompute {
			m.stats.Recomputed++
		}
		return m.exec(in.Node)
	case plan.Offload:
		return m.offload(in.Node)
	case plan.Restore:
		return m.restore(in.Node)
	}
	return fmt.Errorf("step %v is not for this machine (program bug)", in.Op) // leaves are read in place
}

// input returns the current value of node i: the caller's for a leaf, the machine's otherwise.
func (m *Machine) input(i int) (gorgonia.Value, error) {
	if m.info.Leaf[i] {
		if v := m.info.Nodes[i].Value(); v != nil {
			return v, nil
		}
		return nil, fmt.Errorf("leaf %v has no value bound", m.info.Nodes[i])
	}
	if v := m.slots[i].val; v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("input %v has no live value (program bug)", m.info.Nodes[i])
}

// exec runs node i's op on its inputs.
func (m *Machine) exec(i int) error {
	m.scratch = m.scratch[:0]
	for _, c := range m.info.Inputs[i] {
		v, err := m.input(c)
		if err != nil {
			return err
		}
		m.scratch = append(m.scratch, v)
	}
	node := m.info.Nodes[i]
	op := node.Op()
	if pd, ok := op.(gorgonia.UsePreallocDoer); ok && !node.IsScalar() {
		dst, buf, err := m.newBuffer(node.Dtype(), node.Shape())
		if err != nil {
			return err
		}
		v, err := pd.UsePreallocDo(dst, m.scratch...)
		if err == nil && sameStart(v, dst) {
			m.stats.PreallocResults++
			m.slots[i] = slot{val: v, buf: buf}
			return nil
		}
		// Like the TapeMachine, fall back to Do when the prealloc path fails or ignores the buffer.
		m.slots[i] = slot{val: dst, buf: buf}
		if err := m.release(i); err != nil {
			return err
		}
	}
	v, err := op.Do(m.scratch...)
	if err != nil {
		return err
	}
	return m.adopt(i, v)
}

// adopt takes the result of op.Do: a scalar stays a Go value, a view into an input shares that
// input's buffer, anything else is copied into a buffer of its own.
func (m *Machine) adopt(i int, v gorgonia.Value) error {
	d, ok := v.(tensor.DenseTensor)
	if !ok {
		m.stats.ScalarResults++
		m.slots[i] = slot{val: v}
		return nil
	}
	for k, c := range m.info.Inputs[i] {
		if within(d, m.scratch[k]) {
			s := m.slots[c] // zero for a leaf: the alias is the caller's memory
			if s.buf != nil {
				s.buf.refs++
			}
			m.stats.AliasedResults++
			m.slots[i] = slot{val: v, buf: s.buf}
			return nil
		}
	}
	dst, buf, err := m.newBuffer(d.Dtype(), d.Shape())
	if err != nil {
		return err
	}
	if err := tensor.Copy(dst, d); err != nil {
		return errors.Join(err, m.freeBuffer(buf))
	}
	m.stats.CopiedResults++
	m.stats.CopiedBytes += buf.size
	m.slots[i] = slot{val: dst, buf: buf}
	return nil
}

func (m *Machine) freeBuffer(b *buffer) error {
	m.stats.Frees++
	m.stats.LiveBytes -= b.size
	return m.alloc.Free(b.mem, b.size)
}

// offload copies node i's value to host memory and drops the device instance.
func (m *Machine) offload(i int) error {
	v := m.slots[i].val
	d, ok := v.(*tensor.Dense)
	if !ok { // a scalar is a Go value: park it
		m.parked[i] = v
		return m.release(i)
	}
	if d.IsMaterializable() {
		d = d.Materialize().(*tensor.Dense)
	}
	n := d.DataSize() * int(d.Dtype().Size())
	if cap(m.host[i]) < n {
		m.host[i] = make([]byte, n)
	}
	m.host[i] = m.host[i][:n]
	copy(m.host[i], d.Raw[:n])
	m.stats.OffloadedBytes += int64(n)
	return m.release(i)
}

// restore copies node i's value back from host memory into a fresh buffer.
func (m *Machine) restore(i int) error {
	if v := m.parked[i]; v != nil {
		m.parked[i] = nil
		m.slots[i] = slot{val: v}
		return nil
	}
	node := m.info.Nodes[i]
	dst, buf, err := m.newBuffer(node.Dtype(), node.Shape())
	if err != nil {
		return err
	}
	copy(dst.Raw, m.host[i])
	m.slots[i] = slot{val: dst, buf: buf}
	return nil
}

// sameStart says whether v is the tensor backed by dst's memory.
func sameStart(v gorgonia.Value, dst *tensor.Dense) bool {
	d, ok := v.(tensor.DenseTensor)
	return ok && d.Uintptr() == dst.Uintptr()
}

// within says whether the data of d starts inside the memory of v.
func within(d tensor.DenseTensor, v gorgonia.Value) bool {
	in, ok := v.(tensor.DenseTensor)
	if !ok || in.MemSize() == 0 {
		return false
	}
	p, lo := d.Uintptr(), in.Uintptr()
	return p >= lo && p < lo+in.MemSize()
}
