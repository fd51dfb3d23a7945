package train

import (
	"fmt"
	"math"
	"math/rand"
)

// Counting is the synthetic task the examples train on: each sequence counts through an alphabet of
// Alphabet tokens (ids Base .. Base+Alphabet-1) from a random start with a random stride in
// 1..Strides, wrapping around: 7 10 13 16 ... A model that has learned it predicts every token but the
// first two exactly, so the loss has a known floor (Floor) far below the ln(vocab) of a random model,
// and a tiny model gets most of the way within a few hundred steps.
type Counting struct {
	Base, Alphabet, Strides int
	Down                    bool // count downwards: 13 10 7 4 ...
}

// DefaultCounting counts through 32 tokens starting at id 4 with strides 1..3.
var DefaultCounting = Counting{Base: 4, Alphabet: 32, Strides: 3}

// Validate checks the task fits a vocabulary of vocab tokens.
func (c Counting) Validate(vocab int) error {
	if c.Alphabet < 2 || c.Strides < 1 || c.Strides >= c.Alphabet || c.Base < 0 || c.Base+c.Alphabet > vocab {
		return fmt.Errorf("train: counting task base %d alphabet %d strides %d does not fit vocabulary %d",
			c.Base, c.Alphabet, c.Strides, vocab)
	}
	return nil
}

// Batch returns batch sequences of seq tokens each.
func (c Counting) Batch(rng *rand.Rand, batch, seq int) [][]int {
	out := make([][]int, batch)
	for b := range out {
		start, stride := rng.Intn(c.Alphabet), 1+rng.Intn(c.Strides)
		row := make([]int, seq)
		for t := range row {
			step := t * stride
			if c.Down {
				step = c.Alphabet*t - step // (start - t*stride) mod Alphabet, kept non-negative
			}
			row[t] = c.Base + (start+step)%c.Alphabet
		}
		out[b] = row
	}
	return out
}

// Floor is the lowest expected loss (mean cross-entropy over the seq-1 predicted tokens): only the
// second token, which reveals the stride, is uncertain.
func (c Counting) Floor(seq int) float64 {
	if seq < 2 {
		return 0
	}
	return math.Log(float64(c.Strides)) / float64(seq-1)
}
