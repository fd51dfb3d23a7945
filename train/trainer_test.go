package train

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train/vm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func tinyWeights(t testing.TB, preset string) *models.Weights {
	t.Helper()
	cfg, err := models.Preset(preset)
	require.NoError(t, err)
	w, err := models.InitWeights(cfg, 1, nil)
	require.NoError(t, err)
	return w
}

var attentionLoRA = &models.LoRA{Rank: 4, Alpha: 8, Targets: []string{"c_attn", "c_proj", "c_fc"}, Seed: 3}

// gradients runs one forward and backward pass and returns the loss and a copy of every gradient.
func gradients(t *testing.T, preset string, lora *models.LoRA, recompute, offload bool, ids [][]int) (float64, [][]float32) {
	t.Helper()
	alloc := &vm.GoAllocator{Poison: true}
	tr, err := New(tinyWeights(t, preset), alloc, WithLoRA(lora), WithRecompute(recompute), WithOffload(offload))
	require.NoError(t, err)
	defer func() { require.NoError(t, tr.Close()); assert.Zero(t, alloc.LiveBytes()) }()
	c, err := tr.compiled(ids)
	require.NoError(t, err)
	c.train, err = tr.machine(c.g, true)
	require.NoError(t, err)
	loss, err := tr.run(c.train, c.g, ids)
	require.NoError(t, err)
	defer c.train.Reset()
	st := c.train.Stats()
	assert.Equal(t, recompute, st.Recomputed > 0, "recomputed")
	assert.Equal(t, offload, st.OffloadedBytes > 0, "offloaded")
	var grads [][]float32
	for _, g := range c.g.Grads {
		grads = append(grads, append([]float32(nil), c.train.Value(g).Data().([]float32)...))
	}
	return loss, grads
}

func TestRecomputeAndOffloadGiveTheSameGradients(t *testing.T) {
	ids := DefaultCounting.Batch(rand.New(rand.NewSource(5)), 2, 12)
	for _, preset := range []string{"gpt2-tiny", "llama-tiny"} {
		for _, lora := range []*models.LoRA{nil, {Rank: 4, Alpha: 8, Targets: []string{"q", "v"}, Seed: 3}} {
			if preset == "gpt2-tiny" && lora != nil {
				lora = attentionLoRA
			}
			wantLoss, wantGrads := gradients(t, preset, lora, false, false, ids)
			for _, c := range []struct{ recompute, offload bool }{{true, false}, {false, true}, {true, true}} {
				t.Run(fmt.Sprintf("%s/lora=%v/recompute=%v/offload=%v", preset, lora != nil, c.recompute, c.offload), func(t *testing.T) {
					loss, grads := gradients(t, preset, lora, c.recompute, c.offload, ids)
					assert.Equal(t, wantLoss, loss, "loss bit for bit")
					assert.Equal(t, wantGrads, grads, "gradients bit for bit")
				})
			}
		}
	}
}
