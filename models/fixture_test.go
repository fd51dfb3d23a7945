package models

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// reference is a fixture's reference.json: PyTorch's outputs for input_ids
// with labels = input_ids.
type reference struct {
	InputIDs    [][]int            `json:"input_ids"`
	Loss        float64            `json:"loss"`
	Logits      []float64          `json:"logits"`
	LogitsShape []int              `json:"logits_shape"`
	GradNorms   map[string]float64 `json:"grad_norms"`
}

// fixtureDir finds ../shared/fixtures/hf/name from the repository root
// (GMLAKE_FIXTURES overrides the hf directory).
func fixtureDir(t testing.TB, name string) string {
	candidates := []string{os.Getenv("GMLAKE_FIXTURES"), "../shared/fixtures/hf", "../../shared/fixtures/hf"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		dir := filepath.Join(c, name)
		if _, err := os.Stat(filepath.Join(dir, "reference.json")); err == nil {
			return dir
		}
	}
	t.Skipf("fixture %s not found (set GMLAKE_FIXTURES to the fixtures/hf directory)", name)
	return ""
}

func loadReference(t testing.TB, dir string) reference {
	raw, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	require.NoError(t, err)
	var ref reference
	require.NoError(t, json.Unmarshal(raw, &ref))
	return ref
}

// runTape executes the graph with a stock TapeMachine.
func runTape(t testing.TB, g *Graph, ids [][]int) {
	var flat []int
	for _, row := range ids {
		flat = append(flat, row...)
	}
	require.NoError(t, g.SetIDs(flat))
	m := gorgonia.NewTapeMachine(g.G)
	defer m.Close()
	require.NoError(t, m.RunAll())
}

func float32Values(t testing.TB, n *gorgonia.Node) []float32 {
	d, ok := n.Value().(*tensor.Dense)
	require.True(t, ok, "%v has value %T", n, n.Value())
	if d.IsScalar() {
		return []float32{d.Data().(float32)}
	}
	return d.Data().([]float32)
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// TestFixtures checks loss, logits and every parameter's gradient norm
// against PyTorch on the Hugging Face fixtures.
func TestFixtures(t *testing.T) {
	for _, name := range []string{"gpt2-tiny", "llama-tiny"} {
		t.Run(name, func(t *testing.T) {
			dir := fixtureDir(t, name)
			ref := loadReference(t, dir)
			cfg, err := LoadConfig(dir)
			require.NoError(t, err)
			w, err := LoadWeights(dir, cfg, nil)
			require.NoError(t, err)
			batch, seq := len(ref.InputIDs), len(ref.InputIDs[0])
			g, err := Build(w, BuildOptions{Batch: batch, Seq: seq})
			require.NoError(t, err)
			runTape(t, g, ref.InputIDs)

			loss := float64(float32Values(t, g.Loss)[0])
			lossErr := math.Abs(loss-ref.Loss) / math.Abs(ref.Loss)
			assert.Less(t, lossErr, 1e-4, "loss %v, reference %v", loss, ref.Loss)

			require.Equal(t, ref.LogitsShape, []int(g.Logits.Shape()))
			logits := float32Values(t, g.Logits)
			require.Len(t, logits, len(ref.Logits))
			var maxLogitErr float64
			for i, v := range logits {
				maxLogitErr = math.Max(maxLogitErr, math.Abs(float64(v)-ref.Logits[i]))
			}
			assert.Less(t, maxLogitErr, 1e-4)

			require.ElementsMatch(t, keys(ref.GradNorms), g.Names)
			var worst float64
			var worstName string
			for i, n := range g.Names {
				got := norm(float32Values(t, g.Grads[i]))
				rel := math.Abs(got-ref.GradNorms[n]) / ref.GradNorms[n]
				assert.Less(t, rel, 1e-3, "grad norm of %s: %v, reference %v", n, got, ref.GradNorms[n])
				if rel > worst {
					worst, worstName = rel, n
				}
			}
			t.Logf("%s: loss rel err %.2e, max |logit err| %.2e, worst grad-norm rel err %.2e (%s)",
				name, lossErr, maxLogitErr, worst, worstName)
		})
	}
}

func keys(m map[string]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
