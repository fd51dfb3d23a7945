package graphexec

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/models"
)

// cpuAdamW is the train package's AdamW (PyTorch's, with global-norm clipping) in float64.
type cpuAdamW struct {
	cfg  gpu.AdamWConfig
	m, v [][]float64
	step int
}

func (o *cpuAdamW) update(params []*tensor.Dense, grads [][]float32) {
	if o.m == nil {
		for _, p := range params {
			o.m = append(o.m, make([]float64, p.Shape().TotalSize()))
			o.v = append(o.v, make([]float64, p.Shape().TotalSize()))
		}
	}
	var sq float64
	for _, g := range grads {
		for _, x := range g {
			sq += float64(x) * float64(x)
		}
	}
	clip := 1.0
	if c := float64(o.cfg.MaxNorm) / (math.Sqrt(sq) + 1e-6); o.cfg.MaxNorm > 0 && c < 1 {
		clip = c
	}
	o.step++
	lr, b1, b2 := float64(o.cfg.LR), float64(o.cfg.Beta1), float64(o.cfg.Beta2)
	bc1, bc2 := 1-math.Pow(b1, float64(o.step)), 1-math.Pow(b2, float64(o.step))
	for i, p := range params {
		w := p.Data().([]float32)
		for j := range w {
			g := float64(grads[i][j]) * clip
			o.m[i][j] = b1*o.m[i][j] + (1-b1)*g
			o.v[i][j] = b2*o.v[i][j] + (1-b2)*g*g
			mh, vh := o.m[i][j]/bc1, o.v[i][j]/bc2
			w[j] = float32(float64(w[j]) - lr*mh/(math.Sqrt(vh)+float64(o.cfg.Eps)) - lr*float64(o.cfg.WeightDecay)*float64(w[j]))
		}
	}
}

// TestTrainerMatchesCPU trains the tiny fixtures for a few steps on the GPU and on the CPU (each
// op's own Do, AdamW in float64) from the same weights, and compares the losses step by step and
// the trained parameters at the end; then it checks that the loss falls on a repeated batch.
func TestTrainerMatchesCPU(t *testing.T) {
	d := newDevice(t)
	cfg := gpu.AdamWConfig{LR: 5e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MaxNorm: 1}
	for _, tc := range []struct {
		dir  string
		lora *models.LoRA
	}{
		{"gpt2-tiny", nil},
		{"llama-tiny", &models.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}, Seed: 3}},
	} {
		t.Run(fmt.Sprintf("%s/lora=%t", tc.dir, tc.lora != nil), func(t *testing.T) {
			// Two graphs over two copies of the weights: the GPU trainer uploads one, the CPU
			// reference updates the other in place.
			gGPU, gCPU := buildFixture(t, tc.dir, tc.lora), buildFixture(t, tc.dir, tc.lora)
			tr, err := NewTrainer(d, gGPU, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, tr.Close()) })

			ids := make([]int, gGPU.Batch*gGPU.Seq)
			for i := range ids {
				ids[i] = (i*7 + i/3) % 500
			}
			ref := &cpuAdamW{cfg: cfg}
			var params []*tensor.Dense
			for _, p := range gCPU.Params {
				params = append(params, p.Value().(*tensor.Dense))
			}
			var first, last float32
			for step := range 5 {
				loss, err := tr.Step(ids)
				require.NoError(t, err)

				require.NoError(t, gCPU.SetIDs(ids))
				vals := cpuRun(t, gCPU.G)
				grads := make([][]float32, len(gCPU.Grads))
				for i, gn := range gCPU.Grads {
					grads[i] = floats(vals[gn.ID()])
				}
				cpuLoss := floats(vals[gCPU.Loss.ID()])[0]
				ref.update(params, grads)
				assert.InEpsilon(t, cpuLoss, loss, 1e-4, "loss at step %d", step)
				if step == 0 {
					first = loss
				}
				last = loss
			}
			for i := range gGPU.Params {
				got, err := tr.Param(i)
				require.NoError(t, err)
				assert.LessOrEqual(t, relErr(got, params[i].Data().([]float32)), 1e-3, "parameter %s", gGPU.Names[i])
			}
			for range 25 {
				last, err = tr.Step(ids)
				require.NoError(t, err)
			}
			t.Logf("loss on a repeated batch: %.4f at step 1, %.4f after 30 steps", first, last)
			assert.Less(t, last, first*0.99, "the loss must fall")
		})
	}
}
