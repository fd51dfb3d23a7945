package graphexec

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/models/ops"
)

// Every op of every graph the models build (both architectures, full and LoRA fine-tuning) must
// be described: a new op kind, or a changed String() format, fails here, in CI, not on a GPU.
func TestDescribeCoversTheModels(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		lora *models.LoRA
	}{
		{"gpt2-tiny", nil},
		{"gpt2-tiny", &models.LoRA{Rank: 2, Alpha: 4, Targets: []string{"c_attn"}, Seed: 1}},
		{"llama-tiny", nil},
		{"llama-tiny", &models.LoRA{Rank: 2, Alpha: 4, Targets: []string{"q_proj", "v_proj"}, Seed: 1}},
	} {
		t.Run(fmt.Sprintf("%s/lora=%t", tc.dir, tc.lora != nil), func(t *testing.T) {
			g := buildFixture(t, tc.dir, tc.lora)
			require.NoError(t, CheckGraph(g.G), "what Compile checks first")
			kinds := map[Kind]int{}
			for _, n := range g.G.AllNodes() {
				if n.Op() == nil {
					continue
				}
				d, err := Describe(n.Op())
				require.NoError(t, err, "node %v", n)
				kinds[d.Kind]++
			}
			for _, k := range []Kind{KindAdd, KindMatMul, KindNorm, KindAttention, KindCrossEntropy, KindEmbedding,
				KindActivation, KindConstant, KindReshape} {
				assert.Positive(t, kinds[k], "no %v op in the graph", k)
			}
			if tc.lora != nil {
				assert.Positive(t, kinds[KindScale])
			}
		})
	}
}

func TestDescribeParameters(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(10, 32), gorgonia.WithName("x"))
	gamma := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(32), gorgonia.WithName("g"))
	w := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(8, 32), gorgonia.WithName("w"))
	kv := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(10, 16), gorgonia.WithName("kv"))
	must := func(n *gorgonia.Node, err error) gorgonia.Op {
		require.NoError(t, err)
		return n.Op()
	}
	tests := []struct {
		op   gorgonia.Op
		want Desc
	}{
		{must(ops.RMSNorm(x, gamma, 1e-6)), Desc{Kind: KindNorm, RMS: true, Eps: 1e-6}},
		{must(ops.Scale(x, 0.125)), Desc{Kind: KindScale, C: 0.125}},
		{must(ops.MatMul(x, w, false, true)), Desc{Kind: KindMatMul, TransB: true}},
		{must(ops.RoPE(x, 5, 2, 16, 500000)), Desc{Kind: KindRoPE, Seq: 5, Heads: 2, HeadDim: 16, Theta: 500000}},
		{must(ops.SiLU(x)), Desc{Kind: KindActivation, Name: "silu"}},
		{must(ops.AttentionProbs(x, kv, ops.AttentionShape{Batch: 2, Seq: 5, Heads: 2, KVHeads: 1, HeadDim: 16})),
			Desc{Kind: KindAttention, Attn: Attention{Batch: 2, Seq: 5, Heads: 2, KVHeads: 1, HeadDim: 16}}},
	}
	for _, tt := range tests {
		got, err := Describe(tt.op)
		require.NoError(t, err, "%v", tt.op)
		assert.Equal(t, tt.want, got, "%v", tt.op)
	}

	gt, err := gorgonia.Gt(x, x, false) // a boolean result: no float32 lowering
	require.NoError(t, err)
	_, err = Describe(gt.Op())
	assert.ErrorIs(t, err, ErrUnsupported)
}

// fixtureDir finds ../shared/fixtures/hf/NAME (or GMLAKE_FIXTURES/NAME).
func fixtureDir(t *testing.T, name string) string {
	t.Helper()
	if d := getenv("GMLAKE_FIXTURES"); d != "" {
		return filepath.Join(d, name)
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "fixtures", "hf", name)
}

// fixtureWeights loads the named fixture's weights, skipping the test when it is absent.
func fixtureWeights(t *testing.T, name string) *models.Weights {
	t.Helper()
	dir := fixtureDir(t, name)
	cfg, err := models.LoadConfig(dir)
	if err != nil {
		t.Skipf("fixture %s not available: %v", dir, err)
	}
	w, err := models.LoadWeights(dir, cfg, nil)
	require.NoError(t, err)
	return w
}

func buildFixture(t *testing.T, name string, lora *models.LoRA) *models.Graph {
	t.Helper()
	g, err := models.Build(fixtureWeights(t, name), models.BuildOptions{Batch: 2, Seq: 16, LoRA: lora})
	require.NoError(t, err)
	return g
}
