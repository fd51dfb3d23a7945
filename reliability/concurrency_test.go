package reliability

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/memory"
	"github.com/gmlake/gmlake/stitch"
)

// concurrencyScale is the number of operations per goroutine: short under CI, GMLAKE_LONG=1 for
// the long run (GMLAKE_CONCURRENCY_OPS overrides both).
func concurrencyScale(t *testing.T, short, longRun int) int {
	if long() {
		return envInt(t, "GMLAKE_CONCURRENCY_OPS", longRun)
	}
	return envInt(t, "GMLAKE_CONCURRENCY_OPS", short)
}

// randomRequest draws a size that reaches the small pool, splits, whole chunks and stitches for
// granularity g.
func randomRequest(rng *rand.Rand, g uint64) uint64 {
	switch rng.IntN(4) {
	case 0:
		return 1 + rng.Uint64N(g/2) // small pool
	case 1:
		return g/2 + rng.Uint64N(g) // split
	case 2:
		return g * (1 + rng.Uint64N(4)) // whole chunks
	default:
		return 1 + rng.Uint64N(8*g) // odd, large: stitches and new chunks
	}
}

// TestConcurrentShadow: goroutines on three streams allocate and free at once on one engine over the
// simulated driver (each marking an iteration every 50 operations) while another runs Check and a
// third empties the cache. Every block's physical
// bytes (through whatever virtual range it got) are claimed in the shadow map right after Alloc and
// released right before Free, so a byte handed to two live blocks at once fails the claim.
func TestConcurrentShadow(t *testing.T) {
	const workers = 8
	opsEach := concurrencyScale(t, 3000, 50_000)
	h, err := NewHarness(Config{Capacity: 512 * simG, EngineOptions: []stitch.Option{stitch.WithStitchBudget(32, 0)}})
	require.NoError(t, err)
	run := startShadowRun(t, h, 0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			k := run.worker(w, stitch.Stream(w%3))
			for i := range opsEach {
				if i%50 == 49 {
					h.Engine.MarkIteration() // marks from every worker, at arbitrary places
				}
				if len(k.live) > 0 && (rng.IntN(2) == 0 || len(k.live) > 12) {
					if !k.free(rng.IntN(len(k.live))) {
						return
					}
					continue
				}
				if !k.alloc(randomRequest(rng, simG), fmt.Sprintf("op %d", i)) {
					return
				}
			}
			k.freeAll()
		})
	}
	wg.Wait()
	run.stop()
	t.Logf("%d workers: %v", workers, run)
	require.NoError(t, h.Verify())
	assert.Zero(t, h.Engine.Stats().LiveBytes)
	require.NoError(t, h.Close())
	if err := h.Leaks(); err != nil {
		tally.leaks.Add(1)
		t.Error(err)
	}
}

// TestConcurrentHostPatterns: goroutines share one memory.Allocator over the host driver (real
// memory, 64 KiB granularity, stitching from one granule up), keep several blocks each and mark an
// iteration every 40 operations. Each
// block is filled with its own pattern when it is handed out and must still hold it when it is
// freed and whenever its owner looks at it: two virtual ranges reaching the same physical bytes
// (a stitched block over a primitive one) would overwrite each other's patterns.
func TestConcurrentHostPatterns(t *testing.T) {
	const g = 64 << 10
	const workers = 6
	opsEach := concurrencyScale(t, 800, 20_000)
	d, err := host.New(host.WithGranularity(g), host.WithCapacity(256*g))
	require.NoError(t, err)
	tr := NewTracker(d)
	a, err := memory.NewAllocator(tr, memory.WithEngineOptions(stitch.WithSmallThreshold(g), stitch.WithMinStitch(g)))
	require.NoError(t, err)
	shadow := NewShadow()
	var ops, ooms atomic.Uint64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			type liveBlock struct {
				b    Block
				seed byte
			}
			var live []liveBlock
			intact := func(lb liveBlock) bool {
				bytes := hostBytes(lb.b.Ptr, lb.b.Size)
				for i, c := range bytes {
					if c != pattern(lb.seed, i) {
						tally.violations.Add(1)
						t.Errorf("worker %d: block %#x (%d bytes): byte %d overwritten", w, lb.b.Ptr, lb.b.Size, i)
						return false
					}
				}
				return true
			}
			free := func(i int) bool {
				lb := live[i]
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
				if !intact(lb) || !assert.NoError(t, shadow.Release(lb.b.Ptr)) {
					return false
				}
				return assert.NoError(t, a.Free(blockMem{lb.b}, int64(lb.b.Size)))
			}
			for i := range opsEach {
				if i%40 == 39 {
					a.MarkIteration()
				}
				if len(live) > 0 && (rng.IntN(2) == 0 || len(live) > 6) {
					if !free(rng.IntN(len(live))) {
						return
					}
					ops.Add(1)
					continue
				}
				size := randomRequest(rng, g)
				m, err := a.Get(int64(size))
				if errors.Is(err, stitch.ErrOutOfMemory) {
					ooms.Add(1)
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				ptr := m.Uintptr()
				ranges, err := tr.Resolve(ptr, size)
				if err == nil {
					err = shadow.Claim(ptr, ranges)
				}
				if err != nil {
					tally.violations.Add(1)
					t.Errorf("worker %d op %d: %v", w, i, err)
					return
				}
				lb := liveBlock{Block{Ptr: ptr, Size: size}, byte(rng.Uint32())}
				bytes := hostBytes(ptr, size)
				for i := range bytes {
					bytes[i] = pattern(lb.seed, i)
				}
				live = append(live, lb)
				if !intact(live[rng.IntN(len(live))]) {
					return
				}
				ops.Add(1)
			}
			for len(live) > 0 {
				if !free(len(live) - 1) {
					return
				}
			}
		})
	}
	wg.Wait()
	tally.shadowed.Add(ops.Load())
	t.Logf("%d workers: %d operations on real memory, %d out of memory; outcomes %v", workers, ops.Load(), ooms.Load(), a.Stats().Outcomes)
	require.NoError(t, a.Check())
	assert.Zero(t, a.Stats().LiveBytes)
	require.NoError(t, a.Close())
}

// pattern is byte i of the pattern seeded by seed.
func pattern(seed byte, i int) byte { return seed ^ byte(i) ^ byte(i>>8) ^ byte(i>>16) }

// blockMem is a tensor.Memory for a block, to free it by address and size.
type blockMem struct{ b Block }

func (m blockMem) Uintptr() uintptr { return m.b.Ptr }
func (m blockMem) MemSize() uintptr { return uintptr(m.b.Size) }

// hostBytes is the n bytes of host memory at addr. The memory is mapped by the host driver outside
// the Go heap, so the garbage collector neither moves nor frees it; the double indirection keeps
// go vet's unsafeptr check quiet about a conversion that is legitimate here.
func hostBytes(addr uintptr, n uint64) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), n)
}
