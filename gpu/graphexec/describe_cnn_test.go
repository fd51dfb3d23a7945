package graphexec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/gpu/cudnn"
	"github.com/gmlake/gmlake/models"
)

// Every op of the ResNets' graphs (both block kinds) must be described, with the geometry cuDNN
// gets equal to the one the CPU op computes.
func TestDescribeCoversTheResNets(t *testing.T) {
	for _, block := range []models.ResNetBlock{models.BasicBlock, models.BottleneckBlock} {
		t.Run(string(block), func(t *testing.T) {
			c := models.ResNetConfig{Block: block, Layers: []int{1, 2}, Width: 4, Classes: 5, InChannels: 3, Eps: 1e-5}
			w, err := models.InitResNet(c, 1, nil)
			require.NoError(t, err)
			g, err := models.BuildResNet(w, models.ResNetOptions{Batch: 2, Height: 20, Width: 18})
			require.NoError(t, err)
			kinds := map[Kind]int{}
			parts := map[[2]int]bool{}
			for _, n := range g.G.AllNodes() {
				if n.Op() == nil {
					continue
				}
				d, err := Describe(n.Op())
				require.NoError(t, err, "node %v", n)
				kinds[d.Kind]++
				parts[[2]int{int(d.Kind), d.Part}] = true
				switch d.Kind {
				case KindConv:
					geo := d.CNN.Conv
					out := []int{geo.N, geo.K, geo.P(), geo.Q()}
					switch d.Part {
					case 0:
						assert.Equal(t, out, []int(n.Shape()), "%v", n)
					case 1:
						assert.Equal(t, []int{geo.N, geo.C, geo.H, geo.W}, []int(n.Shape()), "%v", n)
					case 2:
						assert.Equal(t, []int{geo.K, geo.C, geo.R, geo.S}, []int(n.Shape()), "%v", n)
					}
				case KindPool:
					if !d.CNN.Backward {
						p := d.CNN.Pool
						assert.Equal(t, []int{p.X.N, p.X.C, p.P(), p.Q()}, []int(n.Shape()))
						assert.True(t, p.Max)
					}
				case KindBatchNorm:
					assert.InDelta(t, 1e-5, d.CNN.Eps, 1e-12)
				}
			}
			for _, k := range []Kind{KindConv, KindBatchNorm, KindReLU, KindPool, KindGlobalAvgPool, KindClassCrossEntropy,
				KindMatMul, KindAddBias, KindAdd, KindSumRows} {
				assert.Positive(t, kinds[k], "no %v op in the graph", k)
			}
			for part := range 3 {
				assert.True(t, parts[[2]int{int(KindConv), part}], "conv part %d", part)
			}
			for part := range 4 {
				assert.True(t, parts[[2]int{int(KindBatchNorm), part}], "batch norm part %d", part)
			}
		})
	}
}

func TestDescribeConvGeometry(t *testing.T) {
	c := models.ResNetConfig{Block: models.BasicBlock, Layers: []int{1}, Width: 4, Classes: 2, InChannels: 3, Eps: 1e-5}
	w, err := models.InitResNet(c, 1, nil)
	require.NoError(t, err)
	g, err := models.BuildResNet(w, models.ResNetOptions{Batch: 3, Height: 33, Width: 31})
	require.NoError(t, err)
	var stem *Desc
	for _, n := range g.G.AllNodes() {
		if n.Op() == nil {
			continue
		}
		d, err := Describe(n.Op())
		require.NoError(t, err)
		if d.Kind == KindConv && d.CNN.Conv.C == 3 && d.Part == 0 {
			stem = &d
		}
	}
	require.NotNil(t, stem)
	assert.Equal(t, cudnn.ConvGeometry{N: 3, C: 3, H: 33, W: 31, K: 4, R: 7, S: 7, StrideH: 2, StrideW: 2, PadH: 3, PadW: 3},
		stem.CNN.Conv)
	assert.Equal(t, "conv", KindConv.String())
}
