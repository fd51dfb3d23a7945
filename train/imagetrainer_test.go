package train

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train/vm"
)

func tinyResNet(t *testing.T) *models.ResNetWeights {
	c, err := models.ResNetPreset("resnet-tiny")
	require.NoError(t, err)
	w, err := models.InitResNet(c, 1, nil)
	require.NoError(t, err)
	return w
}

// TestImageTrainerLearnsMultiScale trains the tiny ResNet on the color task with a new image
// size every step, on poisoned Go memory: the loss falls and one graph exists per size.
func TestImageTrainerLearnsMultiScale(t *testing.T) {
	alloc := &vm.GoAllocator{Poison: true}
	tr, err := NewImageTrainer(tinyResNet(t), alloc, WithAdamW(AdamW{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, ClipNorm: 1}))
	require.NoError(t, err)
	rng := rand.New(rand.NewSource(1))
	scales := Scales{12, 16, 20}
	var losses []float64
	for range 80 {
		s := scales.Pick(rng)
		b, err := DefaultColorTask.Batch(rng, 16, s, s)
		require.NoError(t, err)
		res, err := tr.Step(b)
		require.NoError(t, err)
		losses = append(losses, res.Loss)
	}
	assert.Equal(t, 3, tr.Shapes())
	first, last := mean(losses[:8]), mean(losses[len(losses)-8:])
	t.Logf("loss %.3f -> %.3f", first, last)
	assert.Less(t, last, 0.5*first, "the loss falls")
	require.NoError(t, tr.Close())
	assert.Zero(t, alloc.LiveBytes(), "everything returns to the allocator")
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func TestImageTrainerBadBatch(t *testing.T) {
	tr, err := NewImageTrainer(tinyResNet(t), &vm.GoAllocator{})
	require.NoError(t, err)
	defer tr.Close()
	b, err := DefaultColorTask.Batch(rand.New(rand.NewSource(1)), 2, 8, 8)
	require.NoError(t, err)
	bad := b
	bad.Labels = []int{0, 10}
	_, err = tr.Step(bad)
	assert.ErrorIs(t, err, ErrBatch)
	bad = b
	bad.C = 1
	_, err = tr.Step(bad)
	assert.ErrorIs(t, err, ErrBatch)
	_, err = DefaultColorTask.Batch(rand.New(rand.NewSource(1)), 0, 8, 8)
	assert.ErrorIs(t, err, ErrBatch)
	assert.Zero(t, tr.Steps())
}

// TestMultiScaleTraceReplays records a multi-scale run and replays it through gmlake, the
// Gorgonia pool and the caching allocator.
func TestMultiScaleTraceReplays(t *testing.T) {
	const steps = 6
	rec := NewRecorder(&vm.GoAllocator{})
	tr, err := NewImageTrainer(tinyResNet(t), rec)
	require.NoError(t, err)
	rng := rand.New(rand.NewSource(2))
	for _, s := range []int{16, 12, 20, 16, 12, 20}[:steps] {
		b, err := DefaultColorTask.Batch(rng, 4, s, s)
		require.NoError(t, err)
		_, err = tr.Step(b)
		require.NoError(t, err)
	}
	tt := rec.Trace("resnet-tiny-multiscale")
	require.NoError(t, tr.Close())
	require.NoError(t, tt.Validate())
	assert.Len(t, tt.Iterations(), steps)
	p, err := bench.Prepare("recorded", tt)
	require.NoError(t, err)
	for _, name := range []string{"gmlake", "gorgonia", "caching"} {
		spec, err := bench.SimSpec(name)
		require.NoError(t, err)
		rep, err := bench.Measure(p, spec, bench.MeasureOptions{})
		require.NoError(t, err, name)
		assert.Positive(t, rep.PeakActive, name)
		assert.GreaterOrEqual(t, rep.PeakReserved, rep.PeakActive, name)
	}
}
