package reliability

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// TestShadowCatchesOneByteUnderTwoRanges: one physical allocation mapped under two virtual ranges
// (what a stitched block does) resolves to the same physical bytes through both, so the shadow map
// refuses the second claim however the ranges overlap.
func TestShadowCatchesOneByteUnderTwoRanges(t *testing.T) {
	tr := NewTracker(sim.New())
	h, err := tr.Create(4 * simG)
	require.NoError(t, err)
	a, err := tr.Reserve(4 * simG)
	require.NoError(t, err)
	b, err := tr.Reserve(8 * simG)
	require.NoError(t, err)
	require.NoError(t, tr.Map(a, 4*simG, h, 0))
	require.NoError(t, tr.Map(b, 4*simG, h, 0))        // a handle maps only whole: h twice in b,
	require.NoError(t, tr.Map(b+4*simG, 4*simG, h, 0)) // so h's last chunk meets its first
	assert.Equal(t, 3, tr.Mappings())

	ra, err := tr.Resolve(a+simG/2, 3*simG) // [G/2, 3.5G) of h
	require.NoError(t, err)
	assert.Equal(t, []PhysRange{{h, simG / 2, 3 * simG}}, ra, "contiguous mappings merge")
	rb, err := tr.Resolve(b+4*simG-512, 1024) // the last 512 bytes of h, then its first 512
	require.NoError(t, err)
	assert.Equal(t, []PhysRange{{h, 4*simG - 512, 512}, {h, 0, 512}}, rb)

	tests := []struct {
		name    string
		first   []PhysRange
		second  []PhysRange
		overlap bool
	}{
		{"same bytes", ra, ra, true},
		{"last byte of one, first of the other", []PhysRange{{h, 0, 100}}, []PhysRange{{h, 99, 10}}, true},
		{"inside", []PhysRange{{h, 0, 4 * simG}}, []PhysRange{{h, simG, 1}}, true},
		{"second piece overlaps", []PhysRange{{h, 0, 512}}, []PhysRange{{h, simG, 512}, {h, 100, 1}}, true},
		{"one block mapping a byte twice", nil, []PhysRange{{h, 0, 512}, {h, 256, 512}}, true},
		{"adjacent", []PhysRange{{h, 0, 100}}, []PhysRange{{h, 100, 100}}, false},
		{"another handle", []PhysRange{{h, 0, 100}}, []PhysRange{{h + 1, 0, 100}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewShadow()
			require.NoError(t, s.Claim(1, tt.first))
			err := s.Claim(2, tt.second)
			if !tt.overlap {
				require.NoError(t, err)
				assert.Equal(t, 2, s.Blocks())
				return
			}
			require.ErrorIs(t, err, ErrOverlap)
			assert.Equal(t, 1, s.Blocks(), "a refused claim records nothing")
			require.NoError(t, s.Release(1))
			if tt.first != nil {
				require.NoError(t, s.Claim(2, tt.first), "free again once released")
			}
		})
	}

	s := NewShadow()
	assert.ErrorIs(t, s.Release(7), ErrNotClaimed)
	require.NoError(t, s.Claim(7, ra))
	assert.ErrorIs(t, s.Claim(7, rb), ErrOverlap, "a pointer live twice")
	assert.Equal(t, uint64(3*simG), s.Bytes())

	_, err = tr.Resolve(b+8*simG, 1)
	assert.ErrorIs(t, err, ErrUnmapped, "outside every range")
	require.NoError(t, tr.Unmap(b, 4*simG))
	_, err = tr.Resolve(b, 1)
	assert.ErrorIs(t, err, ErrUnmapped, "unmapped chunk")
	_, err = tr.Resolve(b+4*simG, 8*simG)
	assert.ErrorIs(t, err, ErrUnmapped, "runs past the range")
}

// TestHarnessSeesWhatTheEngineHides: driver objects the engine does not know of break the accounting
// cross-check at once and show as leaks after Close, so the fault sweep cannot miss a lost chunk,
// range or mapping.
func TestHarnessSeesWhatTheEngineHides(t *testing.T) {
	tests := []struct {
		name  string
		stray func(d stitch.Driver) error
	}{
		{"a chunk", func(d stitch.Driver) error { _, err := d.Create(simG); return err }},
		{"a range", func(d stitch.Driver) error { _, err := d.Reserve(simG); return err }},
		{"a mapping", func(d stitch.Driver) error {
			h, err := d.Create(simG)
			if err != nil {
				return err
			}
			a, err := d.Reserve(simG)
			if err != nil {
				return err
			}
			return d.Map(a, simG, h, 0)
		}},
		{"an event", func(d stitch.Driver) error { _, err := d.RecordEvent(1); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHarness(Config{Capacity: 16 * simG})
			require.NoError(t, err)
			require.NoError(t, h.Apply(Op{Kind: OpAlloc, ID: 1, Size: 3 * simG}))
			require.NoError(t, h.Verify())
			require.NoError(t, tt.stray(h.Tracker))
			if tt.name != "an event" { // the engine reports no event count to compare with
				assert.ErrorIs(t, h.Verify(), ErrViolation)
			}
			require.NoError(t, h.Close())
			assert.ErrorIs(t, h.Leaks(), ErrLeak)
		})
	}
}

// TestNewSoak: the soak of a small trace repeats iterations 1-2 (the last marker's iteration is
// left out) with fresh IDs, re-allocates the block carried into the segment and frees the one
// carried out, so every repetition starts from the same live set and the trace stays valid.
func TestNewSoak(t *testing.T) {
	ev := func(k trace.Kind, id int64, size uint64) trace.Event {
		return trace.Event{Kind: k, ID: id, Size: size}
	}
	tr := &trace.Trace{Name: "tiny", Events: []trace.Event{
		ev(trace.Alloc, 1, 100),                       // weights: live throughout
		ev(trace.Iter, 0, 0), ev(trace.Alloc, 2, 200), // 2 is carried into iteration 1
		ev(trace.Iter, 1, 0), ev(trace.Free, 2, 0), ev(trace.Alloc, 3, 300), ev(trace.Free, 3, 0),
		ev(trace.Iter, 2, 0), ev(trace.Alloc, 4, 400), // 4 is carried out of the segment
		ev(trace.Iter, 3, 0), ev(trace.Free, 4, 0),
	}}
	s, err := NewSoak(tr, 1, 5)
	require.NoError(t, err)
	require.NoError(t, s.Trace.Validate())
	assert.Equal(t, 2, s.SegmentIters)
	assert.Equal(t, 3, s.Repetitions, "at least 5 iterations")
	var iters []int64
	allocs := map[uint64]int{}
	for _, e := range s.Trace.Events {
		switch e.Kind {
		case trace.Iter:
			iters = append(iters, e.ID)
		case trace.Alloc:
			allocs[e.Size]++
		}
	}
	assert.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6}, iters)
	assert.Equal(t, map[uint64]int{100: 1, 200: 3, 300: 3, 400: 3}, allocs)
	// Segment: i1 f2 a3 f3 i2 a4, then f4; later repetitions also re-allocate 2.
	assert.Equal(t, 8, s.SegmentEvents)
	assert.Len(t, s.Trace.Events, 3+7+8+8, "prefix, a first repetition on the live block, two fresh ones")

	_, err = NewSoak(tr, 3, 5)
	assert.ErrorIs(t, err, ErrShortTrace)
}
