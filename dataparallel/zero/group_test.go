package zero

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func randomSlices(rng *rand.Rand, sizes []int, scale float64) [][]float32 {
	out := make([][]float32, len(sizes))
	for i, n := range sizes {
		out[i] = make([]float32, n)
		for j := range out[i] {
			out[i][j] = float32(rng.NormFloat64() * scale)
		}
	}
	return out
}

// meanInRankOrder is what the group averages: the rank-ordered float32 sum times 1/N.
func meanInRankOrder(perRank [][][]float32) [][]float32 {
	n := len(perRank)
	out := make([][]float32, len(perRank[0]))
	for p := range out {
		out[p] = make([]float32, len(perRank[0][p]))
		for _, g := range perRank {
			for j, x := range g[p] {
				out[p][j] += x
			}
		}
		if n > 1 {
			for j := range out[p] {
				out[p][j] *= float32(1) / float32(n)
			}
		}
	}
	return out
}

func fill(t *testing.T, g *Group, rank int, grads [][]float32) {
	t.Helper()
	require.NoError(t, g.Layout().Flatten(g.Grads(rank), grads))
}

func params(t *testing.T, g *Group, rank int, sizes []int) [][]float32 {
	t.Helper()
	out := make([][]float32, len(sizes))
	for i, n := range sizes {
		out[i] = make([]float32, n)
	}
	require.NoError(t, g.Layout().Unflatten(out, g.Params(rank)))
	return out
}

// TestShardedEqualsUnsharded runs N ranks (each with its own gradients) against one unsharded
// optimizer fed the averaged gradient: parameters must be bit-identical without clipping (the
// element-wise update does not care where an element's state lives) and within float rounding of
// the global norm with it; stages 1 and 2 must agree bit for bit.
func TestShardedEqualsUnsharded(t *testing.T) {
	sizes := []int{1000, 37, 4096, 3, 515} // straddle shard boundaries for every N below
	const steps = 4
	for _, clip := range []float64{0, 0.5} {
		for _, ranks := range []int{1, 2, 3, 4, 8} {
			t.Run(fmt.Sprintf("clip=%g/ranks=%d", clip, ranks), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(ranks), 7))
				cfg := AdamW{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, ClipNorm: clip}
				init := randomSlices(rng, sizes, 1)

				refLayout, err := NewLayout(sizes, 1, 0)
				require.NoError(t, err)
				ref, err := NewGroup(refLayout, cfg, init)
				require.NoError(t, err)
				groups := map[Stage]*Group{}
				for _, st := range []Stage{Stage1, Stage2} {
					l, err := NewLayout(sizes, ranks, 0)
					require.NoError(t, err)
					groups[st], err = NewGroup(l, cfg, init, WithStage(st))
					require.NoError(t, err)
				}
				for range steps {
					perRank := make([][][]float32, ranks)
					for r := range perRank {
						perRank[r] = randomSlices(rng, sizes, 0.3)
						for _, g := range groups {
							fill(t, g, r, perRank[r])
						}
					}
					fill(t, ref, 0, meanInRankOrder(perRank))
					refNorm, err := ref.Step()
					require.NoError(t, err)
					for st, g := range groups {
						norm, err := g.Step()
						require.NoError(t, err)
						assert.InEpsilon(t, refNorm, norm, 1e-6, "%v norm", st)
					}
				}
				want := params(t, ref, 0, sizes)
				s1, s2 := groups[Stage1], groups[Stage2]
				for r := range ranks {
					assert.Equal(t, params(t, s1, r, sizes), params(t, s2, r, sizes), "rank %d: stage 1 and 2 differ", r)
					got := params(t, s2, r, sizes)
					if clip == 0 {
						require.Equal(t, want, got, "rank %d", r)
						continue
					}
					for p := range want {
						for j := range want[p] {
							require.InDelta(t, want[p][j], got[p][j], 1e-6*(1+math.Abs(float64(want[p][j]))),
								"rank %d param %d element %d", r, p, j)
						}
					}
				}
			})
		}
	}
}

func TestOptimizerStateShrinksWithRanks(t *testing.T) {
	sizes := []int{1 << 20, 12345}
	init := randomSlices(rand.New(rand.NewPCG(1, 2)), sizes, 1)
	prev := int64(math.MaxInt64)
	for _, ranks := range []int{1, 2, 4, 8, 16} {
		l, err := NewLayout(sizes, ranks, 0)
		require.NoError(t, err)
		g, err := NewGroup(l, AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, init)
		require.NoError(t, err)
		b := g.OptimizerBytes()
		assert.Equal(t, int64(8*l.ShardLen), b)
		assert.Less(t, b, prev, "%d ranks", ranks)
		assert.LessOrEqual(t, b*int64(ranks), int64(8*(l.Total+ranks*l.Align)), "padding stays below one alignment unit per rank")
		prev = b
	}
	_, err := NewGroup(&Layout{Ranks: 1, Padded: 1, ShardLen: 1}, AdamW{}, nil, WithStage(3))
	assert.ErrorIs(t, err, ErrLayout)
}
