package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEmbeddingGatherScatter(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(27, 28))
	const vocab, dim = 11, 7
	hids := []int32{3, 0, 10, 3, 3, 7} // repeats exercise the atomic scatter
	htab, hdy := normalSlice(r, vocab*dim), normalSlice(r, len(hids)*dim)
	tab := upload(t, d, htab, vocab, dim)
	ids, err := d.NewIds(hids, vocab)
	require.NoError(t, err)
	t.Cleanup(func() { ids.Free() })

	out := empty(t, d, len(hids), dim)
	require.NoError(t, d.EmbeddingGather(out, tab, ids))
	want := make([]float64, len(hids)*dim)
	for k, id := range hids {
		for c := range dim {
			want[k*dim+c] = float64(htab[int(id)*dim+c])
		}
	}
	assertClose(t, want, download(t, out), 0, "gather")

	dtab := empty(t, d, vocab, dim)
	require.NoError(t, d.Zero(dtab))
	require.NoError(t, d.EmbeddingScatterAdd(dtab, ids, upload(t, d, hdy, len(hids), dim)))
	grad := make([]float64, vocab*dim)
	for k, id := range hids {
		for c := range dim {
			grad[int(id)*dim+c] += float64(hdy[k*dim+c])
		}
	}
	assertClose(t, grad, download(t, dtab), tolReduce, "scatter-add")
}

func crossEntropyRef(logits []float64, targets []int32, v int) (loss []float64) {
	loss = make([]float64, len(targets))
	for r, tg := range targets {
		if tg == IgnoreIndex {
			continue
		}
		row := logits[r*v : (r+1)*v]
		m := math.Inf(-1)
		for _, x := range row {
			m = math.Max(m, x)
		}
		s := 0.0
		for _, x := range row {
			s += math.Exp(x - m)
		}
		loss[r] = m + math.Log(s) - row[tg]
	}
	return loss
}

func TestCrossEntropy(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(29, 30))
	const rows, v = 6, 50
	targets := []int32{4, IgnoreIndex, 49, 0, 17, IgnoreIndex}
	hl := randSlice(r, rows*v, -4, 4)
	logits := upload(t, d, hl, rows, v)
	ids, err := d.NewIds(targets, v, IgnoreIndex)
	require.NoError(t, err)
	t.Cleanup(func() { ids.Free() })

	loss, lse := empty(t, d, rows), empty(t, d, rows)
	require.NoError(t, d.CrossEntropy(loss, lse, logits, ids))
	wantLoss := crossEntropyRef(to64(hl), targets, v)
	assertClose(t, wantLoss, download(t, loss), tolReduce, "loss per row")

	// Mean over the counted rows on the device, as the training loop does it.
	total := empty(t, d, 1)
	require.NoError(t, d.Sum(total, loss, 0))
	require.NoError(t, d.Scale(total, total, 0.25))
	mean := (wantLoss[0] + wantLoss[2] + wantLoss[3] + wantLoss[4]) / 4
	assertClose(t, []float64{mean}, download(t, total), tolReduce, "mean loss")

	dloss := upload(t, d, []float32{1.5}, 1)
	dl := empty(t, d, rows, v)
	require.NoError(t, d.CrossEntropyBackward(dl, logits, lse, ids, dloss, 0.25))
	f := func(x []float64) []float64 {
		l := crossEntropyRef(x, targets, v)
		s := 0.0
		for _, e := range l {
			s += e
		}
		return []float64{s * 0.25}
	}
	assertClose(t, numGrad(f, to64(hl), []float64{1.5}), download(t, dl), tolReduce, "dlogits")
}
