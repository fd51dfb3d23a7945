package plan

import (
	"errors"
	"fmt"
)

// ErrNotLive is wrapped by Simulate's error for a step that reads a value with no live instance.
var ErrNotLive = errors.New("plan: step reads a value that is not live")

// Simulate replays prog as an executor does, with bytes(i) bytes per value of node i (leaves take
// none: they are the caller's) and views (isView(i): the value shares its first input's buffer, as
// a reshape does) counted once per buffer, and returns the peak of live bytes. It also checks the
// program: every read must find a live instance. A leaf that prog never loads is read in place
// (train/vm's leaves), so it is always live.
func (gr *Graph) Simulate(prog []Step, bytes func(int) int64, isView func(int) bool) (int64, error) {
	type buffer struct {
		refs int
		size int64
	}
	inst := make([]*buffer, gr.Len()) // node -> buffer of its live instance
	for _, i := range gr.unloadedLeaves(prog) {
		inst[i] = &buffer{refs: 1}
	}
	var live, peak int64
	release := func(i int) {
		b := inst[i]
		inst[i] = nil
		if b == nil {
			return
		}
		if b.refs--; b.refs == 0 {
			live -= b.size
		}
	}
	for p, s := range prog {
		i := s.Node
		switch s.Op {
		case Exec:
			for _, c := range gr.Inputs[i] {
				if inst[c] == nil {
					return 0, fmt.Errorf("%w: step %d (%v %d) reads node %d", ErrNotLive, p, s.Op, i, c)
				}
			}
			if isView(i) {
				inst[i] = inst[gr.Inputs[i][0]]
				inst[i].refs++
				break
			}
			fallthrough
		case Load, Restore:
			b := &buffer{refs: 1}
			if !gr.Leaf[i] {
				b.size = bytes(i)
				live += b.size
			}
			inst[i] = b
		case Offload:
			if inst[i] == nil {
				return 0, fmt.Errorf("%w: step %d offloads node %d", ErrNotLive, p, i)
			}
			release(i)
		}
		peak = max(peak, live)
		for _, r := range s.Release {
			release(r)
		}
	}
	return peak, nil
}

// unloadedLeaves lists the leaves that no Load step of prog brings in.
func (gr *Graph) unloadedLeaves(prog []Step) []int {
	loaded := make([]bool, gr.Len())
	for _, s := range prog {
		if s.Op == Load {
			loaded[s.Node] = true
		}
	}
	var out []int
	for i, leaf := range gr.Leaf {
		if leaf && !loaded[i] {
			out = append(out, i)
		}
	}
	return out
}
