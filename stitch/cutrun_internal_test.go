package stitch

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCutRun: a run of chunks is cut into handles of one size, the last one short; a short last
// handle under a quarter of the size joins the one before it (never the only one, never a handle
// of an earlier run, and not with fixed handles).
func TestCutRun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before      []uint64
		n, size     uint64
		join        bool
		want        []uint64
		description string
	}{
		{"whole handles", nil, 16, 8, true, []uint64{8, 8}, ""},
		{"short end kept", nil, 18, 8, true, []uint64{8, 8, 2}, "a quarter of the size is kept"},
		{"short end joined", nil, 17, 8, true, []uint64{8, 9}, "under a quarter joins"},
		{"one short handle", nil, 1, 8, true, []uint64{1}, "the only handle stays"},
		{"fixed handles", nil, 17, 8, false, []uint64{8, 8, 1}, ""},
		{"after another run", []uint64{9}, 1, 4, true, []uint64{9, 1}, "an earlier run's handle is not joined"},
		{"after another run, two", []uint64{9}, 9, 8, true, []uint64{9, 9}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cutRun(append([]uint64(nil), tc.before...), tc.n, tc.size, tc.join)
			assert.Equal(t, tc.want, got, tc.description)
		})
	}
}
