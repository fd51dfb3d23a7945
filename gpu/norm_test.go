package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func layerNormRef(x, gamma, beta []float64, cols int, eps float64) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/cols; r++ {
		row := x[r*cols : (r+1)*cols]
		mean, v := 0.0, 0.0
		for _, e := range row {
			mean += e
		}
		mean /= float64(cols)
		for _, e := range row {
			v += (e - mean) * (e - mean)
		}
		rstd := 1 / math.Sqrt(v/float64(cols)+eps)
		for c, e := range row {
			out[r*cols+c] = (e-mean)*rstd*gamma[c] + beta[c]
		}
	}
	return out
}

func rmsNormRef(x, gamma []float64, cols int, eps float64) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/cols; r++ {
		row := x[r*cols : (r+1)*cols]
		s := 0.0
		for _, e := range row {
			s += e * e
		}
		rstd := 1 / math.Sqrt(s/float64(cols)+eps)
		for c, e := range row {
			out[r*cols+c] = e * rstd * gamma[c]
		}
	}
	return out
}

func TestLayerNorm(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(17, 18))
	const rows, cols, eps = 5, 24, 1e-5
	hx, hg, hb, hw := normalSlice(r, rows*cols), randSlice(r, cols, 0.5, 1.5), normalSlice(r, cols),
		normalSlice(r, rows*cols)
	x, g, b, w := upload(t, d, hx, rows, cols), upload(t, d, hg, cols), upload(t, d, hb, cols), upload(t, d, hw, rows, cols)
	y, mean, rstd := empty(t, d, rows, cols), empty(t, d, rows), empty(t, d, rows)
	require.NoError(t, d.LayerNorm(y, mean, rstd, x, g, b, eps))
	assertClose(t, layerNormRef(to64(hx), to64(hg), to64(hb), cols, eps), download(t, y), tolElem, "layernorm")

	dx, dg, db := empty(t, d, rows, cols), empty(t, d, cols), empty(t, d, cols)
	require.NoError(t, d.LayerNormBackward(dx, dg, db, w, x, mean, rstd, g))
	x64, g64, b64, w64 := to64(hx), to64(hg), to64(hb), to64(hw)
	assertClose(t, numGrad(func(x []float64) []float64 { return layerNormRef(x, g64, b64, cols, eps) }, x64, w64),
		download(t, dx), tolReduce, "dx")
	assertClose(t, numGrad(func(g []float64) []float64 { return layerNormRef(x64, g, b64, cols, eps) }, g64, w64),
		download(t, dg), tolReduce, "dgamma")
	assertClose(t, numGrad(func(b []float64) []float64 { return layerNormRef(x64, g64, b, cols, eps) }, b64, w64),
		download(t, db), tolReduce, "dbeta")
}

func TestRMSNorm(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(19, 20))
	const rows, cols, eps = 6, 32, 1e-6
	hx, hg, hw := normalSlice(r, rows*cols), randSlice(r, cols, 0.5, 1.5), normalSlice(r, rows*cols)
	x, g, w := upload(t, d, hx, rows, cols), upload(t, d, hg, cols), upload(t, d, hw, rows, cols)
	y, rstd := empty(t, d, rows, cols), empty(t, d, rows)
	require.NoError(t, d.RMSNorm(y, rstd, x, g, eps))
	assertClose(t, rmsNormRef(to64(hx), to64(hg), cols, eps), download(t, y), tolElem, "rmsnorm")

	dx, dg := empty(t, d, rows, cols), empty(t, d, cols)
	require.NoError(t, d.RMSNormBackward(dx, dg, w, x, rstd, g))
	x64, g64, w64 := to64(hx), to64(hg), to64(hw)
	assertClose(t, numGrad(func(x []float64) []float64 { return rmsNormRef(x, g64, cols, eps) }, x64, w64),
		download(t, dx), tolReduce, "dx")
	assertClose(t, numGrad(func(g []float64) []float64 { return rmsNormRef(x64, g, cols, eps) }, g64, w64),
		download(t, dg), tolReduce, "dgamma")
}

func TestNormStatsMatchTheForwardPass(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(41, 42))
	const rows, cols, eps = 7, 300, 1e-5
	x := upload(t, d, normalSlice(r, rows*cols), rows, cols)
	y := empty(t, d, rows, cols)
	for _, rms := range []bool{false, true} {
		wantMean, wantRstd, mean, rstd := empty(t, d, rows), empty(t, d, rows), empty(t, d, rows), empty(t, d, rows)
		if rms {
			require.NoError(t, d.RMSNorm(y, wantRstd, x, nil, eps))
		} else {
			require.NoError(t, d.LayerNorm(y, wantMean, wantRstd, x, nil, nil, eps))
		}
		require.NoError(t, d.NormStats(mean, rstd, x, eps, rms))
		assertClose(t, to64(download(t, wantRstd)), download(t, rstd), 0, "rstd")
		if !rms {
			assertClose(t, to64(download(t, wantMean)), download(t, mean), 0, "mean")
		}
	}
}
