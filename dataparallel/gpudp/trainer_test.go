package gpudp

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/dataparallel/nccl"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/gpu/graphexec"
	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train"
)

// adamw: a large epsilon keeps the update Lipschitz in the gradient, so gradients that differ by
// summation order (micro-batches, reductions) give updates within the tolerance.
var adamw = gpu.AdamWConfig{LR: 3e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-3, WeightDecay: 0.01, MaxNorm: 1}

const (
	seed  = 11
	batch = 4
	seq   = 16
	steps = 3
)

// gpus skips the test unless n GPUs and NCCL are usable here.
func gpus(t *testing.T, n int) []int {
	t.Helper()
	have, err := gpu.DeviceCount()
	if errors.Is(err, gpu.ErrUnavailable) || (err == nil && have < n) {
		t.Skipf("needs %d GPUs (have %d: %v)", n, have, err)
	}
	require.NoError(t, err)
	if _, err := nccl.Open(); errors.Is(err, nccl.ErrUnavailable) {
		t.Skip(err)
	}
	devices := make([]int, n)
	for i := range devices {
		devices[i] = i
	}
	return devices
}

func weights(t *testing.T) *models.Weights {
	t.Helper()
	cfg, err := models.Preset("gpt2-tiny")
	require.NoError(t, err)
	w, err := models.InitWeights(cfg, seed, nil)
	require.NoError(t, err)
	return w
}

func batches(t *testing.T) [][][]int {
	t.Helper()
	rng := rand.New(rand.NewSource(5))
	out := make([][][]int, steps)
	for i := range out {
		out[i] = train.DefaultCounting.Batch(rng, batch, seq)
	}
	return out
}

func flat(rows [][]int) []int { return flatten(rows) }

// reference trains graphexec's single-GPU Trainer on whole batches and returns its parameters.
func reference(t *testing.T, data [][][]int) [][]float32 {
	t.Helper()
	d, err := gpu.New()
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()
	g, err := models.Build(weights(t), models.BuildOptions{Batch: batch, Seq: seq})
	require.NoError(t, err)
	tr, err := graphexec.NewTrainer(d, g, adamw)
	require.NoError(t, err)
	defer func() { assert.NoError(t, tr.Close()) }()
	for _, ids := range data {
		_, err := tr.Step(flat(ids))
		require.NoError(t, err)
	}
	out := make([][]float32, len(g.Params))
	for i := range g.Params {
		out[i], err = tr.Param(i)
		require.NoError(t, err)
	}
	return out
}

// dataParallel trains on len(devices) GPUs, each rank on its share of every batch.
func dataParallel(t *testing.T, devices []int, data [][][]int, alloc Allocator) [][]float32 {
	t.Helper()
	tr, err := New(weights(t), Options{Devices: devices, AdamW: adamw, Recompute: true, Allocator: alloc,
		Arena: 4 << 30})
	require.NoError(t, err)
	defer func() { assert.NoError(t, tr.Close()) }()
	n := len(devices)
	for _, ids := range data {
		per := make([][][]int, n)
		for r := range per {
			per[r] = ids[r*batch/n : (r+1)*batch/n]
		}
		st, err := tr.Step(per)
		require.NoError(t, err)
		assert.False(t, math.IsNaN(float64(st.Loss)))
	}
	got, err := tr.Params(0)
	require.NoError(t, err)
	for r := 1; r < n; r++ {
		other, err := tr.Params(r)
		require.NoError(t, err)
		require.Equal(t, got, other, "rank %d holds the same parameters as rank 0", r)
	}
	for r, m := range tr.Memory() {
		t.Logf("%s rank %d: peak active %d, peak reserved %d, fragmentation %.3f, driver calls %d",
			alloc, r, m.PeakActive, m.PeakReserved, m.Fragmentation, m.DriverCalls)
		assert.GreaterOrEqual(t, m.PeakReserved, m.PeakActive)
	}
	require.NoError(t, tr.Check())
	return got
}

func compare(t *testing.T, want, got [][]float32) { compareTo(t, "the single-GPU trainer", want, got) }

func compareTo(t *testing.T, what string, want, got [][]float32) {
	t.Helper()
	require.Len(t, got, len(want))
	worst := 0.0
	for i := range want {
		require.Len(t, got[i], len(want[i]))
		for j := range want[i] {
			worst = max(worst, math.Abs(float64(want[i][j]-got[i][j])))
		}
	}
	t.Logf("largest parameter difference from %s: %.3g", what, worst)
	assert.Less(t, worst, 1e-5)
}

func TestGPUOneRankMatchesSingleGPUTrainer(t *testing.T) {
	devices := gpus(t, 1)
	data := batches(t)
	compare(t, reference(t, data), dataParallel(t, devices, data, GMLake))
}

func TestGPUDataParallelMatchesSingleGPUTrainer(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d GPUs", n), func(t *testing.T) {
			devices := gpus(t, n)
			data := batches(t)
			want := reference(t, data)
			for _, alloc := range []Allocator{GMLake, Gorgonia, Direct} {
				compare(t, want, dataParallel(t, devices, data, alloc))
			}
		})
	}
}

// TestGPUVariableLengths: ranks draw their own sequence lengths each step, as data-parallel
// fine-tuning with dynamic padding does; every pool must stay consistent.
func TestGPUVariableLengths(t *testing.T) {
	devices := gpus(t, 2)
	tr, err := New(weights(t), Options{Devices: devices, AdamW: adamw, Recompute: true})
	require.NoError(t, err)
	defer func() { assert.NoError(t, tr.Close()) }()
	rng := rand.New(rand.NewSource(9))
	var first, last float32
	for step := range 12 {
		per := make([][][]int, len(devices))
		for r := range per {
			per[r] = train.DefaultCounting.Batch(rng, 2, 8+8*rng.Intn(8))
		}
		st, err := tr.Step(per)
		require.NoError(t, err)
		if step == 0 {
			first = st.Loss
		}
		last = st.Loss
	}
	assert.Less(t, last, first, "the loss falls")
	require.NoError(t, tr.Check())
}

func TestNewWithoutEnoughGPUs(t *testing.T) {
	have, err := gpu.DeviceCount()
	if err == nil && have > 0 {
		if _, nerr := nccl.Open(); nerr == nil {
			t.Skip("GPUs and NCCL are here: the GPU tests cover New")
		}
	}
	_, err = New(weights(t), Options{Devices: []int{0, 1}, AdamW: adamw})
	require.Error(t, err)
	assert.True(t, errors.Is(err, nccl.ErrUnavailable) || errors.Is(err, gpu.ErrUnavailable), "got %v", err)
	_, err = New(weights(t), Options{AdamW: adamw})
	assert.Error(t, err, "no devices")
	_, err = newMemorySource("tcmalloc", []int{0}, 0)
	assert.ErrorIs(t, err, ErrAllocator)
}
