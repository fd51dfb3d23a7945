package graphexec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train/plan"
)

// TestProgramRewrites compiles a small GPT-2 graph with LoRA plain, with recomputation, with
// offload and with both, and simulates each program: every step must read only live values, the
// same outputs must survive, recomputation must lower the peak of live activation bytes and add
// recompute steps, offload must lower it too with one restore per offload.
func TestProgramRewrites(t *testing.T) {
	cfg, err := models.Preset("gpt2-tiny")
	require.NoError(t, err)
	cfg.Layers = 4
	w, err := models.InitWeights(cfg, 1, nil)
	require.NoError(t, err)
	g, err := models.Build(w, models.BuildOptions{Batch: 2, Seq: 32,
		LoRA: &models.LoRA{Rank: 4, Alpha: 8, Targets: []string{"c_attn"}, Seed: 1}})
	require.NoError(t, err)

	peaks := map[string]int64{}
	for _, tc := range []struct {
		name               string
		recompute, offload bool
	}{{"plain", false, false}, {"recompute", true, false}, {"offload", false, true}, {"both", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := config{}
			for _, o := range []Option{WithOutputs(g.Loss), WithOutputs(g.Grads...), WithForward(g.Loss),
				WithBlocks(g.BlockOf, g.BlockInputs), WithRecompute(tc.recompute), WithOffload(tc.offload)} {
				o(&c)
			}
			gr, prog, err := analyse(g.G, &c)
			require.NoError(t, err)
			bytes := func(i int) int64 { return int64(gr.Nodes[i].Shape().TotalSize()) * 4 }
			isView := func(i int) bool {
				d, err := Describe(gr.Nodes[i].Op())
				return err == nil && d.Kind == KindReshape
			}
			peak, err := gr.Simulate(prog, bytes, isView)
			require.NoError(t, err)
			require.Positive(t, peak)
			peaks[tc.name] = peak

			count := map[plan.Op]int{}
			recomputes := 0
			first := map[int]plan.Op{} // node -> its first step
			for _, in := range prog {
				count[in.Op]++
				if in.Recompute {
					recomputes++
				}
				if _, ok := first[in.Node]; !ok {
					first[in.Node] = in.Op
				}
			}
			for i := range gr.Nodes {
				op, kept := first[i]
				if gr.Output[i] {
					assert.True(t, kept, "output %v is computed", gr.Nodes[i])
				}
				if kept {
					assert.Equal(t, gr.Leaf[i], op == plan.Load, "%v: inputs, and only inputs, are loaded", gr.Nodes[i])
				}
			}
			assert.Equal(t, tc.recompute, recomputes > 0, "recompute steps")
			assert.Equal(t, tc.offload, count[plan.Offload] > 0, "offload steps")
			assert.Equal(t, count[plan.Offload], count[plan.Restore], "one restore per offload")
		})
	}
	t.Logf("peak live activation bytes: %v", peaks)
	assert.Less(t, peaks["recompute"], peaks["plain"])
	assert.Less(t, peaks["offload"], peaks["plain"])
	assert.LessOrEqual(t, peaks["both"], peaks["recompute"])
}

// TestCompileNeedsBlocks: recomputation without forward roots or blocks is an error, not a silent
// plain program.
func TestCompileNeedsBlocks(t *testing.T) {
	cfg, err := models.Preset("gpt2-tiny")
	require.NoError(t, err)
	w, err := models.InitWeights(cfg, 1, nil)
	require.NoError(t, err)
	g, err := models.Build(w, models.BuildOptions{Batch: 1, Seq: 8})
	require.NoError(t, err)
	c := config{}
	WithRecompute(true)(&c)
	WithOutputs(g.Loss)(&c)
	_, _, err = analyse(g.G, &c)
	assert.ErrorIs(t, err, ErrUnsupported)
}
