package bench

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gmlake/gmlake/stitch"
	"github.com/stretchr/testify/assert"
)

func TestH200VMMCosts(t *testing.T) {
	const chunk = 2 * MiB
	tests := []struct {
		kind  stitch.CallKind
		bytes uint64
		want  time.Duration
	}{
		{stitch.CallCreate, chunk, 9 * time.Microsecond},
		{stitch.CallCreate, 1 * GiB, 512 * 9 * time.Microsecond},
		{stitch.CallMap, 4 * chunk, 4 * 1300 * time.Nanosecond},
		{stitch.CallSetAccess, 3 * GiB, 1536 * 27 * time.Microsecond},
		{stitch.CallSetAccess, chunk + 1, 2 * 27 * time.Microsecond}, // a part of a chunk counts whole
		{stitch.CallUnmap, 3 * GiB, 34 * time.Millisecond / 1536 * 1536},
		{stitch.CallRelease, chunk, 26*time.Millisecond/1024 - 34*time.Millisecond/1536},
		{stitch.CallReserve, 3 * GiB, 17 * time.Microsecond},
		{stitch.CallReserve, chunk, 17 * time.Microsecond}, // per call, whatever the size
		{stitch.CallFree, 3 * GiB, 0},                      // in the unmap's figure
		{stitch.CallRecordEvent, 0, 0},
		{stitch.CallEventDone, 0, 0},
		{stitch.CallDestroyEvent, 0, 0},
		{stitch.CallSynchronize, 0, 0},
		{stitch.CallMemInfo, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.kind.String(), func(t *testing.T) {
			assert.Equal(t, tt.want, H200.VMM(tt.kind, tt.bytes), "%s of %s", tt.kind, FormatBytes(tt.bytes))
		})
	}
	assert.InDelta(t, 22.1, float64(H200.UnmapPerChunk)/float64(time.Microsecond), 0.05)
	assert.InDelta(t, 3.3, float64(H200.ReleasePerChunk)/float64(time.Microsecond), 0.05)
}

func TestH200MallocCosts(t *testing.T) {
	tests := []struct {
		name  string
		bytes uint64
		want  time.Duration
	}{
		{"below the smallest measured size: its figure", 512, 250 * time.Microsecond},
		{"2 MiB, measured", 2 * MiB, 250 * time.Microsecond},
		{"64 MiB, halfway in log2 between 2 MiB and 2 GiB", 64 * MiB, 190 * time.Microsecond},
		{"2 GiB, measured", 2 * GiB, 130 * time.Microsecond},
		{"above the largest measured size: its figure", 40 * GiB, 130 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, H200.Malloc(tt.bytes))
		})
	}
	assert.Equal(t, 600*time.Microsecond, H200.MallocFree(512))
	assert.Equal(t, 600*time.Microsecond, H200.MallocFree(2*GiB))
}

// The model against the composite figures GPU.md measured but the model was not built from: it
// may overestimate (see CostModel), but not by a factor (a unit slip would show here).
func TestH200AgainstCompositeMeasurements(t *testing.T) {
	const chunk = 2 * MiB
	var naive time.Duration // 2 GiB as 1024 chunks: create + map + set access each
	for range 1024 {
		naive += H200.VMM(stitch.CallCreate, chunk) + H200.VMM(stitch.CallMap, chunk) + H200.VMM(stitch.CallSetAccess, chunk)
	}
	assert.InEpsilon(t, float64(32*time.Millisecond), float64(naive), 0.25, "naive VMM allocation of 2 GiB: %s", naive)

	stitched := H200.VMM(stitch.CallReserve, 128*MiB) + H200.VMM(stitch.CallSetAccess, 128*MiB)
	for range 64 {
		stitched += H200.VMM(stitch.CallMap, chunk)
	}
	assert.InEpsilon(t, float64(1300*time.Microsecond), float64(stitched), 0.5, "stitch of 64 chunks: %s", stitched)
}

func TestFastLog2(t *testing.T) {
	for exp := range 64 {
		assert.Equal(t, float64(exp), fastLog2(1<<exp), "2^%d", exp)
	}
	for _, n := range []uint64{3, 5, 255, 1000, 3 * MiB, 1<<40 + 12345} {
		assert.InDelta(t, math.Log2(float64(n)), fastLog2(n), 0.006, "%d", n)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		n := r.Uint64N(1<<50) + 1
		assert.InDelta(t, math.Log2(float64(n)), fastLog2(n), 0.006, "%d", n)
	}
}
