package graphexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"

	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/models"
)

func newDevice(t *testing.T) *gpu.Device {
	t.Helper()
	n, err := gpu.DeviceCount()
	if errors.Is(err, gpu.ErrUnavailable) || (err == nil && n == 0) {
		t.Skipf("no GPU: %v", err)
	}
	require.NoError(t, err)
	d, err := gpu.New()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return d
}

// cpuRun evaluates every node of g on the CPU with each op's own Do, in topological order: the
// reference the GPU run is compared with, node by node.
func cpuRun(t *testing.T, g *gorgonia.ExprGraph) map[int64]gorgonia.Value {
	t.Helper()
	sorted, err := gorgonia.Sort(g)
	require.NoError(t, err)
	slices.Reverse(sorted)
	vals := map[int64]gorgonia.Value{}
	for _, n := range sorted {
		if n.Op() == nil {
			vals[n.ID()] = n.Value()
			continue
		}
		var in []gorgonia.Value
		for it := g.From(n.ID()); it.Next(); {
			in = append(in, vals[it.Node().ID()])
		}
		v, err := n.Op().Do(in...)
		require.NoError(t, err, "CPU %v", n)
		vals[n.ID()] = v
	}
	return vals
}

func floats(v gorgonia.Value) []float32 {
	switch x := v.Data().(type) {
	case []float32:
		return x
	case float32:
		return []float32{x}
	}
	return nil
}

// relErr is ||got - want|| / max(||want||, tiny).
func relErr(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(num) / math.Max(math.Sqrt(den), 1e-30)
}

type reference struct {
	InputIDs [][]int `json:"input_ids"`
	Loss     float64 `json:"loss"`
}

// TestFixturesOnGPU runs the tiny Hugging Face fixtures' graphs (loss and every gradient, full and
// LoRA fine-tuning) on the GPU and checks them against the CPU: loss within 1e-4 relative of the
// Hugging Face reference and of the CPU run, every gradient within 1e-3 (relative L2 error), and
// reports the worst node of the whole graph.
func TestFixturesOnGPU(t *testing.T) {
	d := newDevice(t)
	for _, tc := range []struct {
		dir  string
		lora *models.LoRA
	}{
		{"gpt2-tiny", nil},
		{"gpt2-tiny", &models.LoRA{Rank: 4, Alpha: 8, Targets: []string{"c_attn", "c_fc"}, Seed: 7}},
		{"llama-tiny", nil},
		{"llama-tiny", &models.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}, Seed: 7}},
	} {
		t.Run(fmt.Sprintf("%s/lora=%t", tc.dir, tc.lora != nil), func(t *testing.T) {
			dir := fixtureDir(t, tc.dir)
			raw, err := os.ReadFile(filepath.Join(dir, "reference.json"))
			if err != nil {
				t.Skipf("fixture not available: %v", err)
			}
			var ref reference
			require.NoError(t, json.Unmarshal(raw, &ref))
			cfg, err := models.LoadConfig(dir)
			require.NoError(t, err)
			w, err := models.LoadWeights(dir, cfg, nil)
			require.NoError(t, err)
			g, err := models.Build(w, models.BuildOptions{Batch: len(ref.InputIDs), Seq: len(ref.InputIDs[0]), LoRA: tc.lora})
			require.NoError(t, err)
			require.NoError(t, g.SetIDs(slices.Concat(ref.InputIDs...)))

			want := cpuRun(t, g.G)
			m, err := New(d, g.G, append([]*gorgonia.Node{g.Loss}, g.Grads...)...)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, m.Close()) })
			require.NoError(t, m.Run())

			loss, err := m.Value(g.Loss)
			require.NoError(t, err)
			cpuLoss := floats(want[g.Loss.ID()])[0]
			t.Logf("loss: GPU %.7f, CPU %.7f, Hugging Face %.7f", loss[0], cpuLoss, ref.Loss)
			if tc.lora == nil { // LoRA B starts at zero: the same function, but check the base case only
				assert.InEpsilon(t, ref.Loss, float64(loss[0]), 1e-4, "loss vs Hugging Face")
			}
			assert.InEpsilon(t, float64(cpuLoss), float64(loss[0]), 1e-4, "loss vs CPU")

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
		})
	}
}

// TestEveryNodeMatchesTheCPU keeps every node as an output, so each op's GPU result can be
// compared with its CPU result: a wrong lowering shows up at the op that introduces it.
func TestEveryNodeMatchesTheCPU(t *testing.T) {
	d := newDevice(t)
	for _, dir := range []string{"gpt2-tiny", "llama-tiny"} {
		t.Run(dir, func(t *testing.T) {
			g := buildFixture(t, dir, nil)
			ids := make([]int, g.Batch*g.Seq)
			for i := range ids {
				ids[i] = (i*37 + 11) % 500
			}
			require.NoError(t, g.SetIDs(ids))
			want := cpuRun(t, g.G)
			var ops []*gorgonia.Node
			for _, n := range g.G.AllNodes() {
				if n.Op() != nil {
					ops = append(ops, n)
				}
			}
			m, err := New(d, g.G, ops...)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, m.Close()) })
			require.NoError(t, m.Run())
			bad := 0
			for _, n := range ops {
				got, err := m.Value(n)
				require.NoError(t, err)
				ref := floats(want[n.ID()])
				require.Len(t, got, len(ref), "%v", n)
				if e := relErr(got, ref); e > 1e-3 || math.IsNaN(e) {
					bad++
					if bad <= 10 {
						t.Errorf("%v (%v): relative error %.3e", n.Op(), n.Shape(), e)
					}
				}
			}
			t.Logf("%d op nodes compared, %d off", len(ops), bad)
		})
	}
}
