package train

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCountingBatch(t *testing.T) {
	down := DefaultCounting
	down.Down = true
	for _, c := range []Counting{DefaultCounting, down} {
		checkCounting(t, c)
	}
}

func checkCounting(t *testing.T, c Counting) {
	require.NoError(t, c.Validate(512))
	rng := rand.New(rand.NewSource(1))
	for _, seq := range []int{2, 9, 64} {
		batch := c.Batch(rng, 5, seq)
		require.Len(t, batch, 5)
		for _, row := range batch {
			require.Len(t, row, seq)
			stride := (row[1] - row[0] + c.Alphabet) % c.Alphabet
			if c.Down {
				stride = (row[0] - row[1] + c.Alphabet) % c.Alphabet
			}
			assert.True(t, stride >= 1 && stride <= c.Strides, "stride %d", stride)
			for i, tok := range row {
				assert.True(t, tok >= c.Base && tok < c.Base+c.Alphabet)
				if i > 0 {
					step := (tok - row[i-1] + c.Alphabet) % c.Alphabet
					if c.Down {
						step = (row[i-1] - tok + c.Alphabet) % c.Alphabet
					}
					assert.Equal(t, stride, step, "constant stride")
				}
			}
		}
	}
}

func TestCountingValidate(t *testing.T) {
	cases := []struct {
		c     Counting
		vocab int
		ok    bool
	}{
		{DefaultCounting, 512, true},
		{DefaultCounting, 30, false},
		{Counting{Base: 0, Alphabet: 1, Strides: 1}, 512, false},
		{Counting{Base: 0, Alphabet: 4, Strides: 4}, 512, false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.ok, tc.c.Validate(tc.vocab) == nil, "%+v vocab %d", tc.c, tc.vocab)
	}
}

func TestCountingFloor(t *testing.T) {
	assert.InDelta(t, 1.0986/31, DefaultCounting.Floor(32), 1e-4)
	assert.Zero(t, DefaultCounting.Floor(1))
}
