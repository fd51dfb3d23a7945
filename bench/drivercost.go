package bench

import (
	"math"
	"math/bits"
	"time"

	"github.com/gmlake/gmlake/stitch"
)

// CostModel turns a driver call of a given kind and size into estimated device time. The replays run
// on simulated devices, so calls take no time there; the model says what the same calls would have
// cost on a real GPU. It is linear in the 2 MiB chunks a VMM call covers, and per call for the
// rest, because that is how the calls were measured.
//
// H200 is the only model: the figures measured on the project's GPU machine (NVIDIA H200, driver
// 580.159, CUDA 13.0) on 2026-11-29, table "What the VMM calls cost there" of ../shared/GPU.md,
// one run each. Calls the table does not cover cost nothing here (events, synchronize, memory
// info: host-side queries of microseconds, and a synchronize's wait is the training's work, not
// the allocator's).
//
// Two cross-checks, which disagree in direction:
//   - against that table's composite figures, the model overestimates: it puts a naive VMM
//     allocation of 2 GiB (1024 chunks created, mapped and made accessible one by one) at 38 ms
//     against 32 ms measured, and a stitch of 64 existing chunks (reserve, 64 maps, one set access)
//     at 1.8 ms against 1.3 ms;
//   - against the time cmd/gpu-replay measured in the driver on the same H200 (2026-11-29), with
//     gmlake replaying the traces of ../shared/traces and making the same calls as here, it
//     underestimates: steady iterations spent 1.3-1.9 times the model's figure there, cuMemSetAccess
//     about 35-47 µs per chunk instead of 27, cuMemCreate 2-3.6 times its figure.
//
// So read its figures as the order of magnitude, more likely low than high for gmlake.
type CostModel struct {
	Chunk uint64 // the unit of the per-chunk costs: 2 MiB, CUDA's VMM granularity

	// VMM calls (stitch.Driver), per chunk of the bytes the call covers.
	CreatePerChunk    time.Duration // cuMemCreate
	MapPerChunk       time.Duration // cuMemMap
	SetAccessPerChunk time.Duration // cuMemSetAccess
	UnmapPerChunk     time.Duration // cuMemUnmap
	ReleasePerChunk   time.Duration // cuMemRelease (of the bytes of the handle released)
	// VMM calls, per call whatever the size.
	ReservePerCall time.Duration // cuMemAddressReserve
	FreePerCall    time.Duration // cuMemAddressFree

	// cuMemAlloc, measured at two sizes: SmallMalloc for MallocSmallBytes, LargeMalloc for
	// MallocLargeBytes. A size between costs the interpolation linear in log2(size) (log2 to within
	// 0.006, well under a microsecond here); a size outside costs the nearer figure.
	MallocSmallBytes, MallocLargeBytes uint64
	SmallMalloc, LargeMalloc           time.Duration
	// cuMemFree, per call whatever the size (measured at one size only).
	MallocFreePerCall time.Duration
}

// The H200's measured figures (../shared/GPU.md, 2026-11-29), and those derived from them.
const (
	h200CreatePerChunk    = 9 * time.Microsecond   // cuMemCreate, ~9 µs per 2 MiB chunk
	h200MapPerChunk       = 1300 * time.Nanosecond // cuMemMap, ~1.3 µs per chunk
	h200SetAccessPerChunk = 27 * time.Microsecond  // cuMemSetAccess, ~27 µs per chunk
	h200Reserve           = 17 * time.Microsecond  // cuMemAddressReserve of 3 GiB
	h200StitchedUnmapFree = 34 * time.Millisecond  // unmap + address free of a 3 GiB stitched range
	h200StitchedChunks    = 3 * 1024 / 2           // the chunks of that range
	h200NaiveFree         = 26 * time.Millisecond  // unmap + release of 2 GiB as 1024 single-chunk mappings
	h200NaiveChunks       = 1024                   // the chunks of that allocation
	h200MallocSmall       = 250 * time.Microsecond // cuMemAlloc 2 MiB
	h200MallocLarge       = 130 * time.Microsecond // cuMemAlloc 2 GiB (warm)
	h200MallocFree        = 600 * time.Microsecond // cuMemFree 2 GiB (warm)
	h200UnmapPerChunk     = h200StitchedUnmapFree / h200StitchedChunks
	h200ReleasePerChunk   = h200NaiveFree/h200NaiveChunks - h200UnmapPerChunk
)

// H200 is the CostModel of the project's H200 (see CostModel). Derived figures:
//   - unmap: 34 ms for unmapping and freeing a 3 GiB stitched range (1536 chunks) is 22.1 µs per
//     chunk, all of it charged to the unmap (cuMemAddressFree was not timed on its own, so it costs
//     nothing here);
//   - release: 26 ms for unmapping and releasing 2 GiB made of 1024 single-chunk allocations is
//     25.4 µs per chunk; less the unmap's 22.1 µs leaves 3.3 µs per chunk released.
var H200 = CostModel{
	Chunk:             2 * MiB,
	CreatePerChunk:    h200CreatePerChunk,
	MapPerChunk:       h200MapPerChunk,
	SetAccessPerChunk: h200SetAccessPerChunk,
	UnmapPerChunk:     h200UnmapPerChunk,
	ReleasePerChunk:   h200ReleasePerChunk,
	ReservePerCall:    h200Reserve,
	MallocSmallBytes:  2 * MiB,
	MallocLargeBytes:  2 * GiB,
	SmallMalloc:       h200MallocSmall,
	LargeMalloc:       h200MallocLarge,
	MallocFreePerCall: h200MallocFree,
}

// chunks is the number of model chunks that bytes span, rounded up.
func (m *CostModel) chunks(bytes uint64) time.Duration {
	return time.Duration((bytes + m.Chunk - 1) / m.Chunk)
}

// VMM is the estimated time of a stitch.Driver call of kind over bytes (for Release, the size of
// the handle released; for Reserve and Free, the range's size, which does not matter).
func (m *CostModel) VMM(kind stitch.CallKind, bytes uint64) time.Duration {
	switch kind {
	case stitch.CallCreate:
		return m.chunks(bytes) * m.CreatePerChunk
	case stitch.CallRelease:
		return m.chunks(bytes) * m.ReleasePerChunk
	case stitch.CallMap:
		return m.chunks(bytes) * m.MapPerChunk
	case stitch.CallUnmap:
		return m.chunks(bytes) * m.UnmapPerChunk
	case stitch.CallSetAccess:
		return m.chunks(bytes) * m.SetAccessPerChunk
	case stitch.CallReserve:
		return m.ReservePerCall
	case stitch.CallFree:
		return m.FreePerCall
	}
	return 0
}

// Malloc is the estimated time of a cuMemAlloc of bytes (see CostModel for sizes between the
// measured ones).
func (m *CostModel) Malloc(bytes uint64) time.Duration {
	switch {
	case bytes <= m.MallocSmallBytes:
		return m.SmallMalloc
	case bytes >= m.MallocLargeBytes:
		return m.LargeMalloc
	}
	at := (fastLog2(bytes) - fastLog2(m.MallocSmallBytes)) / (fastLog2(m.MallocLargeBytes) - fastLog2(m.MallocSmallBytes))
	return m.SmallMalloc + time.Duration(math.Round(at*float64(m.LargeMalloc-m.SmallMalloc)))
}

// log2Mantissa[i] is log2(1 + i/256).
var log2Mantissa = func() (t [256]float64) {
	for i := range t {
		t[i] = math.Log2(1 + float64(i)/256)
	}
	return t
}()

// fastLog2 is log2(n) for n > 0 to within 0.006 (the mantissa's top 8 bits): math.Log2 for every
// cuMemAlloc that direct records cost a fifth of its replay time.
func fastLog2(n uint64) float64 {
	exp := bits.Len64(n) - 1
	var top uint64 // the 8 bits after the leading one
	if exp >= 8 {
		top = n >> (exp - 8) & 0xff
	} else {
		top = n << (8 - exp) & 0xff
	}
	return float64(exp) + log2Mantissa[top]
}

// MallocFree is the estimated time of a cuMemFree of bytes.
func (m *CostModel) MallocFree(uint64) time.Duration { return m.MallocFreePerCall }
