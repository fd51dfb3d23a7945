package train

import (
	"math/rand"
	"testing"

	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train/vm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	fullAdamW = AdamW{LR: 3e-3, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, ClipNorm: 1}
	loraAdamW = AdamW{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, ClipNorm: 1}
)

// fit trains tr on task for steps steps with sequence lengths from {8, 12, 16} and returns the eval
// loss on a fixed batch before and after.
func fit(t *testing.T, tr *Trainer, task Counting, steps int) (before, after float64) {
	t.Helper()
	rng := rand.New(rand.NewSource(9))
	held := task.Batch(rand.New(rand.NewSource(10)), 4, 16)
	before, err := tr.Loss(held)
	require.NoError(t, err)
	for range steps {
		_, err := tr.Step(task.Batch(rng, 4, 8+4*rng.Intn(3)))
		require.NoError(t, err)
	}
	after, err = tr.Loss(held)
	require.NoError(t, err)
	return before, after
}

func TestFullFineTuningLearns(t *testing.T) {
	alloc := &vm.GoAllocator{}
	tr, err := New(tinyWeights(t, "gpt2-tiny"), alloc, WithRecompute(true), WithOffload(true), WithAdamW(fullAdamW))
	require.NoError(t, err)
	before, after := fit(t, tr, DefaultCounting, 60)
	t.Logf("full: loss %.3f -> %.3f", before, after)
	assert.Less(t, after, before/2, "loss falls by more than half")
	assert.Equal(t, 3, tr.Shapes(), "one graph per sequence length")
	require.NoError(t, tr.Close())
	assert.Zero(t, alloc.LiveBytes(), "everything returned")
}

// TestLoRALearns adapts a model trained to count upwards to counting downwards with LoRA: the
// adapters alone must bring the loss on the new task down.
func TestLoRALearns(t *testing.T) {
	w := tinyWeights(t, "gpt2-tiny")
	pre, err := New(w, &vm.GoAllocator{}, WithAdamW(fullAdamW))
	require.NoError(t, err)
	fit(t, pre, DefaultCounting, 80)
	require.NoError(t, pre.Close())

	down := DefaultCounting
	down.Down = true
	lora := &models.LoRA{Rank: 8, Alpha: 16, Targets: []string{"c_attn", "c_proj", "c_fc"}, Seed: 3}
	tr, err := New(w, &vm.GoAllocator{}, WithLoRA(lora), WithRecompute(true), WithOffload(true), WithAdamW(loraAdamW))
	require.NoError(t, err)
	defer func() { require.NoError(t, tr.Close()) }()
	before, after := fit(t, tr, down, 80)
	t.Logf("lora: loss %.3f -> %.3f", before, after)
	assert.Less(t, after, before/2, "loss falls by more than half")
}
