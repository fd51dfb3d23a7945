package models

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// runPrealloc executes g the way an own executor does: nodes of
// gorgonia.Sort in reverse, inputs from G.From, UsePreallocDo into a
// NaN-poisoned buffer where the op supports it, Do otherwise.
func runPrealloc(t testing.TB, g *Graph) map[int64]gorgonia.Value {
	sorted, err := gorgonia.Sort(g.G)
	require.NoError(t, err)
	vals := make(map[int64]gorgonia.Value, len(sorted))
	nan := float32(math.NaN())
	for i := len(sorted) - 1; i >= 0; i-- {
		n := sorted[i]
		if n.Op() == nil {
			vals[n.ID()] = n.Value()
			continue
		}
		var in []gorgonia.Value
		for it := g.G.From(n.ID()); it.Next(); {
			in = append(in, vals[it.Node().ID()])
		}
		var v gorgonia.Value
		if pd, ok := n.Op().(gorgonia.UsePreallocDoer); ok && !n.IsScalar() {
			buf := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(n.Shape()...))
			for j := range buf.Data().([]float32) {
				buf.Data().([]float32)[j] = nan
			}
			v, err = pd.UsePreallocDo(buf, in...)
		} else {
			v, err = n.Op().Do(in...)
		}
		require.NoError(t, err, "node %v", n)
		vals[n.ID()] = v
	}
	return vals
}

func valueFloats(t testing.TB, v gorgonia.Value) []float32 {
	d, ok := v.(*tensor.Dense)
	require.True(t, ok, "value %T", v)
	if d.IsScalar() {
		return []float32{d.Data().(float32)}
	}
	return append([]float32(nil), d.Data().([]float32)...)
}

func randomIDs(rng *rand.Rand, batch, seq, vocab int) [][]int {
	ids := make([][]int, batch)
	for b := range ids {
		ids[b] = make([]int, seq)
		for s := range ids[b] {
			ids[b][s] = rng.Intn(vocab)
		}
	}
	return ids
}

func tinyWeights(t testing.TB, preset string) *Weights {
	cfg, err := Preset(preset)
	require.NoError(t, err)
	w, err := InitWeights(cfg, 7, nil)
	require.NoError(t, err)
	return w
}

// TestPreallocExecutorMatchesTapeMachine: an own executor writing into
// poisoned buffers gets bit-identical loss and gradients.
func TestPreallocExecutorMatchesTapeMachine(t *testing.T) {
	for _, tc := range []struct {
		preset string
		lora   *LoRA
	}{
		{"gpt2-tiny", nil},
		{"llama-tiny", nil},
		{"llama-tiny", &LoRA{Rank: 4, Alpha: 8, Targets: []string{"q", "v", "down"}}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			w := tinyWeights(t, tc.preset)
			g, err := Build(w, BuildOptions{Batch: 2, Seq: 7, LoRA: tc.lora})
			require.NoError(t, err)
			runTape(t, g, randomIDs(rand.New(rand.NewSource(3)), 2, 7, w.Config.Vocab))
			vals := runPrealloc(t, g)
			assert.Equal(t, float32Values(t, g.Loss), valueFloats(t, vals[g.Loss.ID()]))
			for i, gr := range g.Grads {
				assert.Equal(t, float32Values(t, gr), valueFloats(t, vals[gr.ID()]), "grad of %s", g.Names[i])
			}
		})
	}
}

// TestGraphsShareWeights: graphs of two shapes bind the same tensors, so a
// weight update made through one is seen by the other.
func TestGraphsShareWeights(t *testing.T) {
	w := tinyWeights(t, "gpt2-tiny")
	short, err := Build(w, BuildOptions{Batch: 2, Seq: 4})
	require.NoError(t, err)
	long, err := Build(w, BuildOptions{Batch: 1, Seq: 9})
	require.NoError(t, err)
	require.Equal(t, short.Names, long.Names)
	for i := range short.Params {
		assert.Same(t, short.Params[i].Value(), long.Params[i].Value(), short.Names[i])
		assert.Same(t, w.Tensors[short.Names[i]], short.Params[i].Value())
	}
	ids := randomIDs(rand.New(rand.NewSource(5)), 1, 9, w.Config.Vocab)
	runTape(t, long, ids)
	before := float32Values(t, long.Loss)[0]
	data := w.Tensors["transformer.ln_f.bias"].Data().([]float32)
	data[0] += 1
	runTape(t, short, randomIDs(rand.New(rand.NewSource(6)), 2, 4, w.Config.Vocab))
	runTape(t, long, ids)
	assert.NotEqual(t, before, float32Values(t, long.Loss)[0])
}

// TestBlocks: BlockOf covers each block's forward op nodes, and a block's
// nodes read only weights, the block's input and the block's own nodes, so
// an executor can recompute a block from its input.
func TestBlocks(t *testing.T) {
	for _, tc := range []struct {
		preset  string
		targets []string
	}{
		{"gpt2-tiny", []string{"c_attn", "c_fc"}},
		{"llama-tiny", []string{"q", "up"}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			w := tinyWeights(t, tc.preset)
			g, err := Build(w, BuildOptions{Batch: 1, Seq: 5, LoRA: &LoRA{Rank: 2, Alpha: 4, Targets: tc.targets}})
			require.NoError(t, err)
			require.Len(t, g.BlockInputs, w.Config.Layers)
			perBlock := make([]int, w.Config.Layers)
			for _, n := range g.G.AllNodes() {
				i, ok := g.BlockOf[n.ID()]
				if !ok {
					continue
				}
				perBlock[i]++
				assert.True(t, g.Forward[n.ID()], "block node %v not forward", n)
				assert.NotNil(t, n.Op())
				for it := g.G.From(n.ID()); it.Next(); {
					c := it.Node().(*gorgonia.Node)
					cb, inBlock := g.BlockOf[c.ID()]
					ok := c.Op() == nil || (inBlock && cb == i) || c == g.BlockInputs[i]
					assert.True(t, ok, "block %d node %v reads %v from outside", i, n, c)
				}
			}
			for i, c := range perBlock {
				assert.Greater(t, c, 5, "block %d", i)
				if i > 0 {
					assert.Equal(t, i-1, g.BlockOf[g.BlockInputs[i].ID()], "input of block %d is block %d's output", i, i-1)
				}
			}
			_, inBlock := g.BlockOf[g.BlockInputs[0].ID()]
			assert.False(t, inBlock)
			for i, gr := range g.Grads {
				assert.False(t, g.Forward[gr.ID()], "grad of %s marked forward", g.Names[i])
			}
		})
	}
}
