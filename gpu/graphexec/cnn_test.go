package graphexec

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"

	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/gpu/cudnn"
	"github.com/gmlake/gmlake/models"
)

// resnetFixture is a small ResNet (both stages, projection shortcuts) on a fixed random batch.
func resnetFixture(t *testing.T, block models.ResNetBlock) *models.ResNetGraph {
	t.Helper()
	c := models.ResNetConfig{Block: block, Layers: []int{1, 1}, Width: 8, Classes: 10, InChannels: 3, Eps: 1e-5}
	w, err := models.InitResNet(c, 11, nil)
	require.NoError(t, err)
	g, err := models.BuildResNet(w, models.ResNetOptions{Batch: 4, Height: 24, Width: 20})
	require.NoError(t, err)
	rng := rand.New(rand.NewSource(12))
	img := make([]float32, g.Images.Shape().TotalSize())
	for i := range img {
		img[i] = float32(rng.NormFloat64())
	}
	labels := []int{3, 0, 9, 3}
	require.NoError(t, g.SetInputs(img, labels))
	return g
}

func requireCuDNN(t *testing.T) {
	t.Helper()
	if _, err := cudnn.Open(); err != nil {
		t.Skipf("no cuDNN: %v", err)
	}
}

// TestResNetOnGPUMatchesCPU runs a ResNet's loss and every gradient through cuDNN (exact float32
// math) and checks them against the CPU ops: loss within 1e-5 relative, each gradient within 1e-3
// relative L2 error; every op node is compared too, so a wrong lowering names itself.
func TestResNetOnGPUMatchesCPU(t *testing.T) {
	d := newDevice(t)
	requireCuDNN(t)
	for _, block := range []models.ResNetBlock{models.BasicBlock, models.BottleneckBlock} {
		t.Run(string(block), func(t *testing.T) {
			g := resnetFixture(t, block)
			want := cpuRun(t, g.G)
			var ops []*gorgonia.Node
			for _, n := range g.G.AllNodes() {
				if n.Op() != nil {
					ops = append(ops, n)
				}
			}
			m, err := Compile(d, g.G, WithOutputs(ops...), WithConvMath(cudnn.FMAMath))
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, m.Close()) })
			require.NoError(t, m.Run())
			loss, err := m.Value(g.Loss)
			require.NoError(t, err)
			cpuLoss := floats(want[g.Loss.ID()])[0]
			t.Logf("loss: GPU %.7f, CPU %.7f", loss[0], cpuLoss)
			assert.InEpsilon(t, float64(cpuLoss), float64(loss[0]), 1e-5, "loss")
			worst, worstName := 0.0, ""
			for i, gn := range g.Grads {
				got, err := m.Value(gn)
				require.NoError(t, err)
				e := relErr(got, floats(want[gn.ID()]))
				if e > worst {
					worst, worstName = e, g.Names[i]
				}
				assert.LessOrEqual(t, e, 1e-3, "gradient of %s", g.Names[i])
			}
			t.Logf("%d gradients, worst relative error %.2e (%s)", len(g.Grads), worst, worstName)
			bad := 0
			for _, n := range ops {
				got, err := m.Value(n)
				require.NoError(t, err)
				ref := floats(want[n.ID()])
				require.Len(t, got, len(ref), "%v", n)
				e := relErr(got, ref)
				if d, _ := Describe(n.Op()); d.Kind == KindPool && d.CNN.Backward && !math.IsNaN(e) {
					// Max pooling follows a rectifier: a window of zeros is a tie, whose gradient the
					// CPU op gives to the first element and cuDNN may give to another. The
					// rectifier's backward zeroes every such position (its input is <= 0 there),
					// which the gradients above check; here only the difference is logged.
					t.Logf("%v: relative error %.3e (ties)", n.Op(), e)
					continue
				}
				if e > 1e-3 || math.IsNaN(e) {
					bad++
					if bad <= 10 {
						t.Errorf("%v (%v): relative error %.3e", n.Op(), n.Shape(), e)
					}
				}
			}
			ws := m.Workspaces()
			t.Logf("%d op nodes compared, %d off; %d workspaces, %d bytes, largest %d", len(ops), bad, ws.Allocs, ws.Bytes, ws.MaxBytes)
		})
	}
}

// TestResNetTrainsOnGPU trains the fixture network for a few steps through the Trainer: the loss
// on the fixed batch falls.
func TestResNetTrainsOnGPU(t *testing.T) {
	d := newDevice(t)
	requireCuDNN(t)
	g := resnetFixture(t, models.BasicBlock)
	tr, err := NewTrainer(d, g.Graph(), gpu.AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MaxNorm: 1},
		WithConvMath(cudnn.FMAMath))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, tr.Close()) })
	var losses []float32
	for range 15 {
		l, err := tr.StepBound(g.Graph())
		require.NoError(t, err)
		losses = append(losses, l)
	}
	t.Logf("losses %v", losses)
	assert.Less(t, losses[len(losses)-1], losses[0]/2)
}
