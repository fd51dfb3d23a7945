package memory

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"

	"github.com/gmlake/gmlake/internal/usergraph"
)

// tapeRun is one training run of a user graph on Gorgonia's TapeMachine with Adam.
type tapeRun struct {
	losses []float32
	live   []uint64 // gmlake live bytes after each step
	stats  []ReclaimStats
}

// tapeVariant says how a run uses gmlake: not at all (the Go heap), with a Reclaimer after each
// step or without, and with ResetAllocator after each machine Reset or without.
type tapeVariant struct {
	gmlake, reclaim, resetAllocator bool
}

func (v tapeVariant) String() string {
	if !v.gmlake {
		return "go-heap"
	}
	return fmt.Sprintf("gmlake/reclaim=%v/reset-allocator=%v", v.reclaim, v.resetAllocator)
}

func trainOnTape(t *testing.T, build func(usergraph.Spec) (*usergraph.Net, error), v tapeVariant, steps int) tapeRun {
	t.Helper()
	n, err := build(usergraph.Spec{Seed: 3})
	require.NoError(t, err)
	opts := []G.VMOpt{G.BindDualValues(n.Learnables...)}
	var r *Reclaimer
	var a *Allocator
	if v.gmlake {
		e := newHostTensorEngine(t)
		a = e.Allocator()
		r, err = NewReclaimer(e)
		require.NoError(t, err)
		r.poison = true // a reclaimed block that is read again turns the loss into NaN
		opts = append(opts, G.WithEngine(r))
	}
	m := G.NewTapeMachine(n.G, opts...)
	solver := G.NewAdamSolver(G.WithLearnRate(0.01))
	var run tapeRun
	for range steps {
		require.NoError(t, m.RunAll())
		run.losses = append(run.losses, n.Loss.Value().Data().(float32))
		require.NoError(t, solver.Step(G.NodesToValueGrads(n.Learnables)))
		m.Reset()
		if !v.gmlake {
			continue
		}
		if v.resetAllocator {
			a.ResetAllocator()
		}
		if v.reclaim {
			st, err := r.Reclaim(n.G, m, solver)
			require.NoError(t, err)
			run.stats = append(run.stats, st)
		}
		run.live = append(run.live, a.Stats().LiveBytes)
	}
	require.NoError(t, m.Close())
	if v.gmlake {
		require.NoError(t, a.Check())
		if v.reclaim {
			st, err := r.Reclaim() // no roots: the run is over, every block it made goes back
			require.NoError(t, err)
			assert.Zero(t, r.Live())
			assert.Zero(t, a.Stats().LiveBytes, "%+v", st)
			require.NoError(t, a.Check())
		}
	}
	return run
}

// TestTapeMachineOnReclaimer trains a user MLP and a user transformer block (Gorgonia ops only) on
// Gorgonia's own TapeMachine with gorgonia.WithEngine over gmlake memory, BindDualValues and Adam,
// for 200 steps: the losses are bit-identical to the same run on the Go heap, with and without
// ResetAllocator after every Reset, and with a Reclaimer after every step the live bytes stay
// flat (reclaimed blocks are poisoned, so a block freed while in use would show up as a NaN loss).
// Without Reclaim (50 steps) the machine and the solver leak the same bytes every step.
func TestTapeMachineOnReclaimer(t *testing.T) {
	const steps = 200
	for name, build := range map[string]func(usergraph.Spec) (*usergraph.Net, error){
		"mlp": usergraph.MLP, "transformer": usergraph.TransformerBlock,
	} {
		t.Run(name, func(t *testing.T) {
			heap := trainOnTape(t, build, tapeVariant{}, steps)
			require.Less(t, heap.losses[steps-1], heap.losses[0], "the net trains")
			for _, v := range []tapeVariant{
				{gmlake: true, reclaim: true},
				{gmlake: true, reclaim: true, resetAllocator: true},
				{gmlake: true, resetAllocator: true},
			} {
				n := steps
				if !v.reclaim {
					n = 50 // enough to see the leak; freeing thousands of blocks at Close is slow under -race
				}
				got := trainOnTape(t, build, v, n)
				assert.Equal(t, heap.losses[:n], got.losses, "%v: losses bit-identical to the Go heap", v)
				if !v.reclaim {
					perStep := (got.live[n-1] - got.live[0]) / uint64(n-1)
					assert.Greater(t, got.live[n-1], got.live[0], "%v: without Reclaim the dropped blocks stay live", v)
					for i := 1; i < n; i++ {
						require.Equal(t, perStep, got.live[i]-got.live[i-1], "%v: the same bytes leak every step", v)
					}
					t.Logf("%v: live bytes %d after step 1, %d after step %d (%d more per step)",
						v, got.live[0], got.live[n-1], n, perStep)
					continue
				}
				for i := range steps {
					require.Equal(t, got.live[0], got.live[i], "%v: live bytes flat (step %d)", v, i+1)
				}
				last := got.stats[steps-1]
				t.Logf("%v: live bytes %d after each of %d steps; per step %d blocks (%d B) reclaimed, %d (%d B) kept",
					v, got.live[0], steps, last.Freed, last.FreedBytes, last.Kept, last.KeptBytes)
			}
		})
	}
}
