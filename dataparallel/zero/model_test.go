package zero_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/dataparallel"
	"github.com/gmlake/gmlake/dataparallel/zero"
	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/train"
	"github.com/gmlake/gmlake/train/vm"
)

// engineMemory is a block of a stitch engine, as Gorgonia's tensor.Memory.
type engineMemory struct{ addr, size uintptr }

func (m engineMemory) Uintptr() uintptr { return m.addr }
func (m engineMemory) MemSize() uintptr { return m.size }

// engineAllocator runs a vm.Machine on one device's pool.
type engineAllocator struct{ e *stitch.Engine }

func (a engineAllocator) Get(size int64) (tensor.Memory, error) {
	p, err := a.e.Alloc(uint64(size), 0)
	if err != nil {
		return nil, err
	}
	return engineMemory{addr: p, size: uintptr(size)}, nil
}

func (a engineAllocator) Free(m tensor.Memory, size int64) error {
	return a.e.Free(m.Uintptr(), uint64(size))
}

// replica is one data-parallel rank: a graph over its micro-batch whose weights are views into
// the group's flat parameter buffer of that rank, and a machine on the rank's own pool.
type replica struct {
	g *models.Graph
	m *vm.Machine
}

const (
	seed  = 11
	batch = 4
	seq   = 12
	steps = 3
)

// adamw: a large epsilon keeps the update Lipschitz in the gradient, so that gradients which
// differ by float rounding (micro-batch sums versus one batch) give updates within tolerance.
var adamw = train.AdamW{LR: 3e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-3, WeightDecay: 0.01, ClipNorm: 1}

func batches(t *testing.T, vocab int) [][][]int {
	t.Helper()
	task := train.DefaultCounting
	require.NoError(t, task.Validate(vocab))
	rng := rand.New(rand.NewSource(5))
	out := make([][][]int, steps)
	for i := range out {
		out[i] = task.Batch(rng, batch, seq)
	}
	return out
}

// referenceWeights trains one train.Trainer on whole batches and returns its final weights.
func referenceWeights(t *testing.T, cfg models.Config, data [][][]int) map[string][]float32 {
	t.Helper()
	w, err := models.InitWeights(cfg, seed, nil)
	require.NoError(t, err)
	tr, err := train.New(w, &vm.GoAllocator{}, train.WithAdamW(adamw))
	require.NoError(t, err)
	for _, ids := range data {
		_, err := tr.Step(ids)
		require.NoError(t, err)
	}
	require.NoError(t, tr.Close())
	out := make(map[string][]float32)
	for name, tt := range w.Tensors {
		out[name] = tt.Data().([]float32)
	}
	return out
}

// shardedWeights trains ranks ranks, each on batch/ranks sequences of every batch, with ZeRO at
// stage st, activations on each rank's own gmlake pool (host memory), and returns rank 0's weights
// after checking that every rank holds the same ones, and the mean loss over ranks of each step.
func shardedWeights(t *testing.T, cfg models.Config, data [][][]int, ranks int, st zero.Stage) (map[string][]float32, []float32) {
	t.Helper()
	pools, err := dataparallel.NewPools(ranks, func(int) (stitch.Driver, error) {
		return host.New(host.WithGranularity(64<<10), host.WithCapacity(256<<20))
	})
	require.NoError(t, err)
	defer func() { assert.NoError(t, pools.Close()) }()

	reps := make([]replica, ranks)
	for r := range reps {
		w, err := models.InitWeights(cfg, seed, nil)
		require.NoError(t, err)
		reps[r].g, err = models.Build(w, models.BuildOptions{Batch: batch / ranks, Seq: seq})
		require.NoError(t, err)
		e, err := pools.Device(r)
		require.NoError(t, err)
		g := reps[r].g
		reps[r].m, err = vm.New(g.G, engineAllocator{e}, vm.WithOutputs(append([]*gorgonia.Node{g.Loss}, g.Grads...)...),
			vm.WithForward(g.Loss), vm.WithBlocks(vm.Blocks{Of: g.BlockOf, Inputs: g.BlockInputs}), vm.WithRecompute(true))
		require.NoError(t, err)
		defer func() { assert.NoError(t, reps[r].m.Close()) }()
	}
	params0 := reps[0].g.Params
	sizes := make([]int, len(params0))
	init := make([][]float32, len(params0))
	for i, p := range params0 {
		init[i] = p.Value().Data().([]float32)
		sizes[i] = len(init[i])
	}
	layout, err := zero.NewLayout(sizes, ranks, 0)
	require.NoError(t, err)
	group, err := zero.NewGroup(layout, zero.AdamW(adamw), init, zero.WithStage(st))
	require.NoError(t, err)
	for r, rep := range reps {
		require.Equal(t, reps[0].g.Names, rep.g.Names, "every rank lays parameters out in one order")
		flat := group.Params(r)
		for i, p := range rep.g.Params {
			s := layout.Params[i]
			view := tensor.New(tensor.WithShape(p.Shape().Clone()...), tensor.WithBacking(flat[s.Offset:s.Offset+s.Len]))
			require.NoError(t, gorgonia.Let(p, view))
		}
	}

	var losses []float32
	for _, ids := range data {
		per := batch / ranks
		var loss float32
		for r, rep := range reps {
			require.NoError(t, rep.g.SetIDs(flatIDs(ids[r*per:(r+1)*per])))
			require.NoError(t, rep.m.RunAll())
			loss += rep.m.Value(rep.g.Loss).Data().(float32) / float32(ranks)
			grads := make([][]float32, len(rep.g.Grads))
			for i, gn := range rep.g.Grads {
				grads[i] = rep.m.Value(gn).Data().([]float32)
			}
			require.NoError(t, layout.Flatten(group.Grads(r), grads))
			rep.m.Reset()
		}
		_, err := group.Step()
		require.NoError(t, err)
		losses = append(losses, loss)
	}
	require.NoError(t, pools.Check())
	for r, st := range pools.Stats() {
		assert.Zero(t, st.LiveBytes, "rank %d's activations all returned", r)
		assert.Positive(t, st.PeakLiveBytes, "rank %d ran on its pool", r)
	}
	for r := 1; r < ranks; r++ {
		require.Equal(t, group.Params(0), group.Params(r), "rank %d's replica", r)
	}
	out := make(map[string][]float32)
	for i, name := range reps[0].g.Names {
		s := layout.Params[i]
		out[name] = group.Params(0)[s.Offset : s.Offset+s.Len]
	}
	return out, losses
}

func flatIDs(rows [][]int) []int {
	var out []int
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// TestDataParallelZeROMatchesTrainer: N ranks on micro-batches with sharded AdamW end where one
// train.Trainer on the whole batches does. With one rank the computation is the trainer's own,
// so the weights must be bit-identical; with more, gradients are summed over micro-batches in
// another order, so they agree within float32 rounding.
func TestDataParallelZeROMatchesTrainer(t *testing.T) {
	cfg, err := models.Preset("gpt2-tiny")
	require.NoError(t, err)
	data := batches(t, cfg.Vocab)
	want := referenceWeights(t, cfg, data)
	init, err := models.InitWeights(cfg, seed, nil)
	require.NoError(t, err)
	moved := 0.0
	for name, w := range want {
		for j, x := range init.Tensors[name].Data().([]float32) {
			moved = max(moved, math.Abs(float64(w[j]-x)))
		}
	}
	require.Greater(t, moved, 1e-3, "training moved the weights, so agreeing means something")
	for _, ranks := range []int{1, 2, 4} {
		for _, st := range []zero.Stage{zero.Stage1, zero.Stage2} {
			t.Run(fmt.Sprintf("%d ranks %v", ranks, st), func(t *testing.T) {
				got, _ := shardedWeights(t, cfg, data, ranks, st)
				require.Len(t, got, len(want))
				worst := 0.0
				for name, w := range want {
					g, ok := got[name]
					require.True(t, ok, name)
					require.Len(t, g, len(w), name)
					for j := range w {
						d := math.Abs(float64(w[j] - g[j]))
						worst = max(worst, d)
						if ranks == 1 {
							require.Equal(t, w[j], g[j], "%s[%d]", name, j)
						}
					}
				}
				t.Logf("largest weight difference from the trainer: %.3g (lr %g, %d steps)", worst, adamw.LR, steps)
				assert.Less(t, worst, 1e-6, "within float32 rounding of the unsharded run")
			})
		}
	}
}
