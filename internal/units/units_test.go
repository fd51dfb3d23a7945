package units

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		bad  bool
	}{
		{in: "40GiB", want: 40 << 30}, {in: "40 GiB", want: 40 << 30}, {in: "1.5g", want: 3 << 29},
		{in: "512MiB", want: 512 << 20}, {in: "2MB", want: 2_000_000}, {in: "4096", want: 4096},
		{in: "12 parsecs", bad: true}, {in: "-1GiB", bad: true}, {in: "", bad: true},
	}
	for _, tc := range tests {
		got, err := ParseBytes(tc.in)
		if tc.bad {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}
