package vm

import (
	"errors"
	"fmt"
	"log/slog"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/train/plan"
)

// ErrClosed is returned by a Machine used after Close.
var ErrClosed = errors.New("vm: machine is closed")

// Machine runs one expression graph on memory from an Allocator. It implements gorgonia.VM.
// A Machine is not safe for concurrent use.
type Machine struct {
	g     *gorgonia.ExprGraph
	alloc Allocator
	cfg   config
	log   *slog.Logger
	info  *plan.Graph
	prog  []plan.Step

	slots   []slot           // current value instance of each node
	host    [][]byte         // offloaded copies, reused across runs
	parked  []gorgonia.Value // offloaded scalars
	scratch []gorgonia.Value
	stats   Stats
	lastRun Stats // counters of the last RunAll alone
	closed  bool
}

// slot is a node's current value and the buffer it lives in (nil for scalars, leaves and aliases of
// leaves).
type slot struct {
	val gorgonia.Value
	buf *buffer
}

// buffer is one block from the Allocator, shared by every value instance that aliases it.
type buffer struct {
	mem  tensor.Memory
	size int64
	refs int
}

// Stats counts what a Machine did since it was built.
type Stats struct {
	Allocs, Frees   int64 // Allocator calls
	LiveBytes       int64 // bytes held now (kept outputs after RunAll)
	PeakLiveBytes   int64 // most bytes held at once during the last RunAll
	CopiedResults   int64 // results of ops without UsePreallocDo copied from the Go heap
	CopiedBytes     int64
	OffloadedBytes  int64
	Recomputed      int64 // forward steps run again in backward
	Steps           int64 // program steps run
	ProgramLen      int   // steps per RunAll
	AliasedResults  int64 // results that share an input's buffer
	ScalarResults   int64 // scalar results, which take no buffer
	PreallocResults int64 // results written by UsePreallocDo into an allocator buffer
}

var _ gorgonia.VM = (*Machine)(nil)

// New compiles g for running on memory from alloc.
func New(g *gorgonia.ExprGraph, alloc Allocator, opts ...Option) (*Machine, error) {
	if alloc == nil {
		return nil, fmt.Errorf("%w: nil allocator", ErrGraph)
	}
	if err := CheckHostMemory(alloc); err != nil {
		return nil, err
	}
	m := &Machine{g: g, alloc: alloc}
	for _, o := range opts {
		o(&m.cfg)
	}
	m.log = m.cfg.logger
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	info, prog, err := compile(g, &m.cfg)
	if err != nil {
		return nil, err
	}
	m.info, m.prog = info, prog
	m.slots = make([]slot, info.Len())
	m.host = make([][]byte, info.Len())
	m.parked = make([]gorgonia.Value, info.Len())
	m.stats.ProgramLen = len(m.prog)
	m.log.Debug("vm: compiled", "nodes", info.Len(), "steps", len(m.prog),
		"recompute", m.cfg.recompute, "offload", m.cfg.offload)
	return m, nil
}

// RunAll runs the program once. Values kept from the previous run are released first.
func (m *Machine) RunAll() error {
	if m.closed {
		return ErrClosed
	}
	if err := m.releaseAll(); err != nil {
		return err
	}
	if mk, ok := m.alloc.(interface{ MarkIteration() }); ok && !m.cfg.noMarks {
		mk.MarkIteration()
	}
	before := m.stats
	m.stats.PeakLiveBytes = m.stats.LiveBytes
	defer func() { m.lastRun = m.stats.since(before) }()
	for p := range m.prog {
		in := &m.prog[p]
		if err := m.step(in); err != nil {
			node := m.info.Nodes[in.Node]
			return errors.Join(fmt.Errorf("vm: %s %v (step %d): %w", in.Op, node, p, err), m.releaseAll())
		}
		for _, i := range in.Release {
			if err := m.release(i); err != nil {
				return errors.Join(err, m.releaseAll())
			}
		}
		m.stats.Steps++
	}
	return nil
}

// Value returns the value of node n after RunAll: an output's value, or a leaf's. It is valid until
// the next RunAll, Reset or Close.
func (m *Machine) Value(n *gorgonia.Node) gorgonia.Value {
	i, ok := m.info.Index[n.ID()]
	if !ok {
		return nil
	}
	if m.info.Leaf[i] {
		return n.Value()
	}
	return m.slots[i].val
}

// Reset releases the values kept from the last run back to the allocator. Errors from the allocator
// are logged; use Release to see them.
func (m *Machine) Reset() {
	if err := m.releaseAll(); err != nil {
		m.log.Error("vm: reset", "err", err)
	}
}

// Release is Reset with the allocator's errors returned.
func (m *Machine) Release() error { return m.releaseAll() }

// Close releases everything the machine holds. The machine cannot be used afterwards.
func (m *Machine) Close() error {
	if m.closed {
		return nil
	}
	err := m.releaseAll()
	m.closed = true
	m.host = nil
	return err
}

// Stats returns counters since the machine was built; PeakLiveBytes is the last run's.
func (m *Machine) Stats() Stats { return m.stats }

// LastRun returns the counters of the last RunAll alone.
func (m *Machine) LastRun() Stats { return m.lastRun }

// since is s minus the counters of an earlier snapshot; byte gauges and ProgramLen are kept.
func (s Stats) since(before Stats) Stats {
	d := s
	d.Allocs -= before.Allocs
	d.Frees -= before.Frees
	d.CopiedResults -= before.CopiedResults
	d.CopiedBytes -= before.CopiedBytes
	d.OffloadedBytes -= before.OffloadedBytes
	d.Recomputed -= before.Recomputed
	d.Steps -= before.Steps
	d.AliasedResults -= before.AliasedResults
	d.ScalarResults -= before.ScalarResults
	d.PreallocResults -= before.PreallocResults
	return d
}

// Program describes the compiled program, one line per step, for debugging.
func (m *Machine) Program() []string {
	out := make([]string, len(m.prog))
	for p, in := range m.prog {
		tag := ""
		if in.Recompute {
			tag = " (recompute)"
		}
		out[p] = fmt.Sprintf("%s %v%s", in.Op, m.info.Nodes[in.Node].Name(), tag)
	}
	return out
}

func (m *Machine) releaseAll() error {
	var errs []error
	for i := range m.slots {
		if m.slots[i].val != nil {
			errs = append(errs, m.release(i))
		}
	}
	return errors.Join(errs...)
}

// release drops node i's current instance, returning its buffer when no other instance shares it.
func (m *Machine) release(i int) error {
	s := m.slots[i]
	m.slots[i] = slot{}
	if s.buf == nil {
		return nil
	}
	s.buf.refs--
	if s.buf.refs > 0 {
		return nil
	}
	m.stats.Frees++
	m.stats.LiveBytes -= s.buf.size
	if err := m.alloc.Free(s.buf.mem, s.buf.size); err != nil {
		return fmt.Errorf("vm: free %d bytes of %v: %w", s.buf.size, m.info.Nodes[i], err)
	}
	return nil
}

// newBuffer gets a zeroed buffer for a dense tensor of the given dtype and shape.
func (m *Machine) newBuffer(dt tensor.Dtype, shape tensor.Shape) (*tensor.Dense, *buffer, error) {
	size := int64(shape.TotalSize()) * int64(dt.Size())
	mem, err := m.alloc.Get(size)
	if err != nil {
		return nil, nil, fmt.Errorf("vm: get %d bytes for %v %v: %w", size, dt, shape, err)
	}
	m.stats.Allocs++
	m.stats.LiveBytes += size
	m.stats.PeakLiveBytes = max(m.stats.PeakLiveBytes, m.stats.LiveBytes)
	d := tensor.New(tensor.Of(dt), tensor.WithShape(shape.Clone()...), tensor.FromMemory(mem.Uintptr(), uintptr(size)))
	clear(d.Raw)
	return d, &buffer{mem: mem, size: size, refs: 1}, nil
}
