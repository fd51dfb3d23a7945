package models

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/train/vm"
)

// TestResNetPresetParams checks the presets against torchvision's parameter counts.
func TestResNetPresetParams(t *testing.T) {
	for name, want := range map[string]int{"resnet18": 11_689_512, "resnet34": 21_797_672, "resnet50": 25_557_032} {
		c, err := ResNetPreset(name)
		require.NoError(t, err)
		n := 0
		for _, s := range resnetSpecs(c) {
			n += tensor.Shape(s.shape).TotalSize()
		}
		assert.Equal(t, want, n, name)
	}
	_, err := ResNetPreset("resnet7")
	assert.ErrorIs(t, err, ErrInvalidConfig)
}

func TestResNetInitAndNames(t *testing.T) {
	c, err := ResNetPreset("resnet18")
	require.NoError(t, err)
	w, err := InitResNet(c, 1, nil)
	require.NoError(t, err)
	assert.Equal(t, 11_689_512, w.Params())
	for _, name := range []string{"conv1.weight", "bn1.weight", "layer1.0.conv2.weight", "layer1.0.bn2.bias",
		"layer2.0.downsample.0.weight", "layer2.0.downsample.1.weight", "layer4.1.bn2.weight", "fc.weight", "fc.bias"} {
		assert.Contains(t, w.Tensors, name)
	}
	assert.NotContains(t, w.Tensors, "layer1.0.downsample.0.weight", "the first stage keeps its shape")
	assert.Equal(t, []int{1000, 512}, []int(w.Tensors["fc.weight"].Shape()))
	c50, err := ResNetPreset("resnet50")
	require.NoError(t, err)
	assert.Equal(t, 2048, c50.Features())
	bad := c
	bad.Layers = []int{2, 0}
	_, err = InitResNet(bad, 1, nil)
	assert.ErrorIs(t, err, ErrInvalidConfig)
}

// microResNet is a network small enough for finite differences over all its parameters.
func microResNet(t *testing.T, block ResNetBlock) *ResNetWeights {
	c := ResNetConfig{Block: block, Layers: []int{1, 1}, Width: 2, Classes: 3, InChannels: 2, Eps: 1e-5}
	w, err := InitResNet(c, 3, nil)
	require.NoError(t, err)
	return w
}

func bindRandomInputs(t *testing.T, g *ResNetGraph, rng *rand.Rand, classes int) {
	img := make([]float32, g.Images.Shape().TotalSize())
	for i := range img {
		img[i] = float32(rng.NormFloat64())
	}
	labels := make([]int, g.Batch)
	for i := range labels {
		labels[i] = rng.Intn(classes)
	}
	require.NoError(t, g.SetInputs(img, labels))
}

func TestResNetBuildShapes(t *testing.T) {
	c, err := ResNetPreset("resnet-tiny")
	require.NoError(t, err)
	w, err := InitResNet(c, 1, nil)
	require.NoError(t, err)
	for _, hw := range [][2]int{{32, 32}, {24, 40}, {17, 9}} {
		g, err := BuildResNet(w, ResNetOptions{Batch: 2, Height: hw[0], Width: hw[1]})
		require.NoError(t, err)
		assert.Equal(t, []int{2, 10}, []int(g.Logits.Shape()))
		assert.Len(t, g.Grads, len(w.Tensors))
		assert.Len(t, g.BlockInputs, 2)
	}
	_, err = BuildResNet(w, ResNetOptions{Batch: 0, Height: 8, Width: 8})
	assert.ErrorIs(t, err, ErrBadShape)
	g, err := BuildResNet(w, ResNetOptions{Batch: 2, Height: 8, Width: 8})
	require.NoError(t, err)
	assert.ErrorIs(t, g.SetInputs(make([]float32, 3), []int{0, 1}), ErrBadShape)
}

// TestResNetGradients compares the symbolic gradients of a whole (micro) ResNet, both block
// kinds, with central finite differences of its loss, on train/vm with poisoned freed memory.
func TestResNetGradients(t *testing.T) {
	for _, block := range []ResNetBlock{BasicBlock, BottleneckBlock} {
		t.Run(string(block), func(t *testing.T) {
			w := microResNet(t, block)
			g, err := BuildResNet(w, ResNetOptions{Batch: 3, Height: 12, Width: 10})
			require.NoError(t, err)
			rng := rand.New(rand.NewSource(5))
			bindRandomInputs(t, g, rng, w.Config.Classes)
			m, err := vm.New(g.G, &vm.GoAllocator{Poison: true}, vm.WithOutputs(append([]*gorgonia.Node{g.Loss}, g.Grads...)...),
				vm.WithForward(g.Loss))
			require.NoError(t, err)
			defer m.Close()
			loss := func() float64 {
				require.NoError(t, m.RunAll())
				return float64(m.Value(g.Loss).Data().(float32))
			}
			loss()
			analytic := make([][]float32, len(g.Grads))
			for i, gr := range g.Grads {
				analytic[i] = append([]float32(nil), m.Value(gr).Data().([]float32)...)
			}
			// A small step: in a network this narrow, rectifier kinks and pooling maxima lie within
			// 1e-3 of many parameters (the differences converge to the gradient only below that).
			const eps = 1e-4
			checked := 0
			for i, name := range g.Names {
				vals := w.Tensors[name].Data().([]float32)
				for _, j := range rng.Perm(len(vals))[:min(4, len(vals))] {
					orig := vals[j]
					vals[j] = orig + eps
					up := loss()
					vals[j] = orig - eps
					down := loss()
					vals[j] = orig
					numeric := (up - down) / (2 * eps)
					assert.InDelta(t, numeric, float64(analytic[i][j]), 2e-3+3e-2*math.Abs(numeric), "%s[%d]", name, j)
					checked++
				}
			}
			assert.Greater(t, checked, 40)
		})
	}
}
