package graphexec

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/gpu/pool"
	"github.com/gmlake/gmlake/models"
)

// trainRun trains a fixture for a few steps on memory from the named pool with the given options
// and returns the losses, the trained parameters and the last step's counts.
func trainRun(t *testing.T, drv *cuda.Driver, alloc, fixture string, lora *models.LoRA, opts ...Option) ([]float32, [][]float32, Counts) {
	t.Helper()
	p, err := pool.New(alloc, drv, 256<<20)
	require.NoError(t, err)
	d, err := gpu.New(gpu.WithAllocator(p))
	require.NoError(t, err)
	g := buildFixture(t, fixture, lora)
	cfg := gpu.AdamWConfig{LR: 5e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MaxNorm: 1}
	tr, err := NewTrainer(d, g, cfg, opts...)
	require.NoError(t, err)
	ids := make([]int, g.Batch*g.Seq)
	var losses []float32
	for step := range 3 {
		for i := range ids {
			ids[i] = (i*7 + i/3 + step*11) % 500
		}
		loss, err := tr.Step(ids)
		require.NoError(t, err)
		losses = append(losses, loss)
	}
	var params [][]float32
	for i := range g.Params {
		v, err := tr.Param(i)
		require.NoError(t, err)
		params = append(params, v)
	}
	m, err := tr.Machine(g)
	require.NoError(t, err)
	counts := m.Counts()
	require.NoError(t, tr.Close())
	require.NoError(t, d.Close())
	assert.Zero(t, d.MemoryStats().LiveBytes, "every tensor returned to the pool")
	require.NoError(t, p.Close())
	return losses, params, counts
}

// TestRewritesAndPoolsMatch trains the fixtures plain on cuMemAlloc memory, then with
// recomputation, offload and both, on each pool (gmlake over driver/cuda, the Gorgonia pool
// algorithm over one cuMemAlloc arena, direct cuMemAlloc): losses and trained parameters must
// match the plain run (the same kernels on the same values; only reductions with atomics may
// differ in the last bits).
func TestRewritesAndPoolsMatch(t *testing.T) {
	newDevice(t) // skips without a GPU
	drv, err := cuda.New()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, drv.Close()) })
	for _, fx := range []struct {
		dir  string
		lora *models.LoRA
	}{
		{"gpt2-tiny", &models.LoRA{Rank: 4, Alpha: 8, Targets: []string{"c_attn", "c_fc"}, Seed: 3}},
		{"llama-tiny", &models.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}, Seed: 3}},
	} {
		refLoss, refParams, refCounts := trainRun(t, drv, "direct", fx.dir, fx.lora)
		require.Zero(t, refCounts.Recomputes+refCounts.Offloads)
		for _, alloc := range pool.Names {
			for _, mode := range []struct {
				name               string
				recompute, offload bool
			}{{"plain", false, false}, {"recompute", true, false}, {"offload", false, true}, {"both", true, true}} {
				t.Run(fmt.Sprintf("%s/%s/%s", fx.dir, alloc, mode.name), func(t *testing.T) {
					losses, params, counts := trainRun(t, drv, alloc, fx.dir, fx.lora,
						WithRecompute(mode.recompute), WithOffload(mode.offload))
					assert.Equal(t, mode.recompute, counts.Recomputes > 0, "recompute steps: %+v", counts)
					assert.Equal(t, mode.offload, counts.Offloads > 0, "offload steps: %+v", counts)
					assert.Equal(t, counts.Offloads, counts.Restores)
					for i := range refLoss {
						assert.InEpsilon(t, refLoss[i], losses[i], 1e-5, "loss at step %d", i)
					}
					for i := range refParams {
						assert.LessOrEqual(t, relErr(params[i], refParams[i]), 1e-5, "parameter %d", i)
					}
				})
			}
		}
	}
}

// TestStepGraphSharesWeights trains one Trainer on two sequence lengths (two graphs over the same
// weights) and checks that a step on the second graph sees the first graph's update: its loss
// equals that of a fresh Trainer started from the updated weights.
func TestStepGraphSharesWeights(t *testing.T) {
	d := newDevice(t)
	w := fixtureWeights(t, "gpt2-tiny")
	g16, err := models.Build(w, models.BuildOptions{Batch: 2, Seq: 16})
	require.NoError(t, err)
	cfg := gpu.AdamWConfig{LR: 5e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MaxNorm: 1}
	tr, err := NewTrainer(d, g16, cfg, WithRecompute(true))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, tr.Close()) })
	g8, err := models.Build(w, models.BuildOptions{Batch: g16.Batch, Seq: g16.Seq / 2})
	require.NoError(t, err)

	ids16 := make([]int, g16.Batch*g16.Seq)
	for i := range ids16 {
		ids16[i] = (i * 13) % 500
	}
	_, err = tr.Step(ids16)
	require.NoError(t, err)
	// The reference: the updated parameters copied into the host weights (before the next step
	// updates them again), a fresh graph, one step.
	for i, p := range g16.Params {
		v, err := tr.Param(i)
		require.NoError(t, err)
		copy(p.Value().Data().([]float32), v)
	}
	ids8 := ids16[:g8.Batch*g8.Seq]
	got, err := tr.StepGraph(g8, ids8)
	require.NoError(t, err)
	gRef, err := models.Build(w, models.BuildOptions{Batch: g8.Batch, Seq: g8.Seq})
	require.NoError(t, err)
	ref, err := NewTrainer(d, gRef, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ref.Close()) })
	want, err := ref.Step(ids8)
	require.NoError(t, err)
	assert.InEpsilon(t, want, got, 1e-5)
}

// TestIdleMachinesHoldNoOutputs: after a step the Trainer releases the machine's outputs (the
// gradients, spent by the update), so a machine kept for a shape that is not running holds no
// device memory but its cached position ids: stepping with a second shape and then the first
// again leaves the device's live bytes where one step of the first left them. Before, each shape's
// machine kept a full set of gradients until it ran again (data-parallel full fine-tuning over 49
// lengths ran out of memory).
func TestIdleMachinesHoldNoOutputs(t *testing.T) {
	d := newDevice(t)
	w := fixtureWeights(t, "gpt2-tiny")
	g16, err := models.Build(w, models.BuildOptions{Batch: 2, Seq: 16})
	require.NoError(t, err)
	tr, err := NewTrainer(d, g16, gpu.AdamWConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, tr.Close()) })
	g8, err := models.Build(w, models.BuildOptions{Batch: 2, Seq: 8})
	require.NoError(t, err)
	ids := make([]int, 2*16)
	for i := range ids {
		ids[i] = (i * 11) % 500
	}

	_, err = tr.Step(ids)
	require.NoError(t, err)
	afterOne := d.MemoryStats().LiveBytes
	m16, err := tr.Machine(g16)
	require.NoError(t, err)
	_, err = m16.Tensor(g16.Grads[0])
	require.ErrorIs(t, err, ErrNotOutput, "the gradients were released")

	_, err = tr.StepGraph(g8, ids[:2*8])
	require.NoError(t, err)
	_, err = tr.Step(ids)
	require.NoError(t, err)
	// Its position ids stay cached (bytes); a set of gradients of the fixture is ~0.5 MiB.
	assert.LessOrEqual(t, d.MemoryStats().LiveBytes, afterOne+64<<10, "the 8-token machine holds no gradients")
}
