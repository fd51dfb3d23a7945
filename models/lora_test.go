package models

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// cloneWeights deep-copies w's base tensors (adapters left out).
func cloneWeights(w *Weights) *Weights {
	c := &Weights{Config: w.Config, Tensors: make(map[string]*tensor.Dense)}
	for name, t := range w.Tensors {
		if !strings.Contains(name, ".lora_") {
			c.Tensors[name] = t.Clone().(*tensor.Dense)
		}
	}
	return c
}

// merge adds scale·A·B of w's adapters into the base weight of module in
// dst, in the weight's storage layout.
func merge(dst, w *Weights, module string, scale float64) {
	a, b := w.Tensors[module+loraA], w.Tensors[module+loraB]
	base := float32s(dst.Tensors[module+".weight"])
	in, r, out := a.Shape()[0], a.Shape()[1], b.Shape()[1]
	ad, bd := float32s(a), float32s(b)
	for i := 0; i < in; i++ {
		for o := 0; o < out; o++ {
			var d float64
			for k := 0; k < r; k++ {
				d += float64(ad[i*r+k]) * float64(bd[k*out+o])
			}
			idx := i*out + o // Conv1D [in, out]
			if w.Config.Arch == ArchLlama {
				idx = o*in + i // nn.Linear [out, in]
			}
			base[idx] += float32(scale * d)
		}
	}
}

// TestLoRAEqualsMergedWeights: a LoRA graph with non-zero adapters computes
// the loss of the base model with the adapters merged into its weights.
func TestLoRAEqualsMergedWeights(t *testing.T) {
	for _, tc := range []struct {
		preset  string
		targets []string
		modules int
	}{
		{"gpt2-tiny", []string{"c_attn", "mlp.c_proj"}, 4},
		{"llama-tiny", []string{"q", "k", "v", "o", "gate", "up", "down"}, 14},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			w := tinyWeights(t, tc.preset)
			lora := &LoRA{Rank: 3, Alpha: 6, Targets: tc.targets, Seed: 11}
			g, err := Build(w, BuildOptions{Batch: 2, Seq: 6, LoRA: lora})
			require.NoError(t, err)
			require.Len(t, g.Params, 2*tc.modules)
			assert.Len(t, g.Frozen, len(paramSpecs(w.Config)))
			rng := rand.New(rand.NewSource(2))
			for _, name := range g.Names {
				require.Contains(t, name, ".lora_")
				if strings.HasSuffix(name, loraB) {
					for _, v := range float32s(w.Tensors[name]) {
						require.Zero(t, v, "B starts at zero")
					}
					for i := range float32s(w.Tensors[name]) {
						float32s(w.Tensors[name])[i] = float32(rng.NormFloat64() * 0.1)
					}
				}
			}
			ids := randomIDs(rng, 2, 6, w.Config.Vocab)
			runTape(t, g, ids)
			loraLoss := float32Values(t, g.Loss)[0]
			for i, gr := range g.Grads {
				assert.Greater(t, norm(float32Values(t, gr)), 0.0, "grad of %s", g.Names[i])
			}

			merged := cloneWeights(w)
			for _, name := range g.Names {
				if module, ok := strings.CutSuffix(name, loraA); ok {
					merge(merged, w, module, lora.Alpha/float64(lora.Rank))
				}
			}
			full, err := Build(merged, BuildOptions{Batch: 2, Seq: 6})
			require.NoError(t, err)
			runTape(t, full, ids)
			fullLoss := float32Values(t, full.Loss)[0]
			assert.InDelta(t, fullLoss, loraLoss, 1e-5*math.Abs(float64(fullLoss)))
			base, err := Build(w, BuildOptions{Batch: 2, Seq: 6})
			require.NoError(t, err)
			runTape(t, base, ids)
			assert.Greater(t, math.Abs(float64(float32Values(t, base.Loss)[0]-loraLoss)), 1e-4, "adapters change the loss")
		})
	}
}

func TestLoRAAdaptersSharedAndChecked(t *testing.T) {
	w := tinyWeights(t, "llama-tiny")
	lora := &LoRA{Rank: 2, Alpha: 2, Targets: []string{"v_proj"}}
	a, err := Build(w, BuildOptions{Batch: 1, Seq: 3, LoRA: lora})
	require.NoError(t, err)
	b, err := Build(w, BuildOptions{Batch: 2, Seq: 5, LoRA: lora})
	require.NoError(t, err)
	require.Equal(t, []string{
		"model.layers.0.self_attn.v_proj.lora_A.weight", "model.layers.0.self_attn.v_proj.lora_B.weight",
		"model.layers.1.self_attn.v_proj.lora_A.weight", "model.layers.1.self_attn.v_proj.lora_B.weight",
	}, a.Names)
	for i := range a.Params {
		assert.Same(t, a.Params[i].Value(), b.Params[i].Value())
	}

	_, err = Build(w, BuildOptions{Batch: 1, Seq: 3, LoRA: &LoRA{Rank: 4, Alpha: 2, Targets: []string{"v"}}})
	assert.ErrorIs(t, err, ErrInvalidConfig, "rank differs from the stored adapters")
	_, err = Build(w, BuildOptions{Batch: 1, Seq: 3, LoRA: &LoRA{Rank: 2, Alpha: 2, Targets: []string{"c_attn"}}})
	assert.ErrorIs(t, err, ErrUnknownTarget)
	_, err = Build(w, BuildOptions{Batch: 1, Seq: 1})
	assert.True(t, errors.Is(err, ErrBadShape))
}
