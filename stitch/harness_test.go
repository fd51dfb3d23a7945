package stitch_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/reliability"
	"github.com/gmlake/gmlake/stitch"
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
	g   = sim.DefaultGranularity
)

// harness drives an engine over a simulated driver and keeps a shadow of every live block: its
// size, its stream and the physical bytes behind it (read back from the driver's mappings), so that
// it can prove no physical byte is ever used by two live blocks.
type harness struct {
	t    testing.TB
	d    *sim.Driver
	e    *stitch.Engine
	live map[uintptr]liveBlock
	phys *reliability.Shadow // live blocks' physical bytes
	ptrs []uintptr           // live pointers in allocation order, for picking one to free
}

type liveBlock struct {
	size   uint64
	stream stitch.Stream
}

func newHarness(t testing.TB, simOpts []sim.Option, opts ...stitch.Option) *harness {
	d := sim.New(simOpts...)
	// The tests count the bytes their mechanisms create: the first iteration's bytes ahead, sized
	// to the simulated device, are tested on their own (firstahead_test.go).
	e, err := stitch.New(d, append([]stitch.Option{stitch.WithExactGrowth()}, opts...)...)
	require.NoError(t, err)
	return &harness{t: t, d: d, e: e, live: map[uintptr]liveBlock{}, phys: reliability.NewShadow()}
}

// alloc allocates and, on success, records the block and checks its physical bytes are its own.
func (h *harness) alloc(size uint64, s stitch.Stream) (uintptr, error) {
	ptr, err := h.e.Alloc(size, s)
	if err != nil {
		return 0, err
	}
	_, dup := h.live[ptr]
	require.False(h.t, dup, "pointer %#x handed out twice", ptr)
	ranges, rerr := h.d.Resolve(ptr, size)
	require.NoError(h.t, rerr, "block %#x (%d bytes) is not wholly mapped", ptr, size)
	claim := make([]reliability.PhysRange, len(ranges))
	for i, r := range ranges {
		claim[i] = reliability.PhysRange{Handle: r.Handle, Offset: r.Offset, Length: r.Size}
	}
	require.NoError(h.t, h.phys.Claim(ptr, claim), "block %#x (%d bytes)", ptr, size)
	h.live[ptr] = liveBlock{size: size, stream: s}
	h.ptrs = append(h.ptrs, ptr)
	return ptr, nil
}

// free frees a live block and forgets it.
func (h *harness) free(ptr uintptr) error {
	b, ok := h.live[ptr]
	require.True(h.t, ok)
	if err := h.e.Free(ptr, b.size); err != nil {
		return err
	}
	delete(h.live, ptr)
	h.ptrs = slices.DeleteFunc(h.ptrs, func(p uintptr) bool { return p == ptr })
	require.NoError(h.t, h.phys.Release(ptr))
	return nil
}

// forgetAll drops the shadow after Reset.
func (h *harness) forgetAll() {
	h.live, h.ptrs = map[uintptr]liveBlock{}, nil
	h.phys.ReleaseAll()
}

// check runs the engine's consistency check and compares its live bytes with the shadow.
func (h *harness) check(context string) {
	require.NoError(h.t, h.e.Check(), context)
	var live uint64
	for _, b := range h.live {
		live += b.size
	}
	st := h.e.Stats()
	require.Equal(h.t, live, st.LiveBytes, context)
	require.Equal(h.t, len(h.live), st.LiveBlocks, context)
}

// closeAndCheckLeaks closes the engine and requires the driver to hold nothing.
// A Close that fails (an injected fault) must succeed when called again.
func (h *harness) closeAndCheckLeaks() {
	if err := h.e.Close(); err != nil {
		require.ErrorIs(h.t, err, sim.ErrInjected)
		require.NoError(h.t, h.e.Close(), "the second Close retries")
	}
	require.Equal(h.t, sim.Live{}, h.d.Live(), "driver objects left after Close")
}

// op is one step of a generated workload.
type op struct {
	kind   opKind
	size   uint64
	stream stitch.Stream
	pick   int // which live block to free
}

type opKind uint8

const (
	opAlloc opKind = iota
	opFree
	opEmptyCache
	opReset
	opMark
)

func (o op) String() string {
	switch o.kind {
	case opAlloc:
		return fmt.Sprintf("alloc(%d, stream %d)", o.size, o.stream)
	case opFree:
		return fmt.Sprintf("free(#%d)", o.pick)
	case opEmptyCache:
		return "empty cache"
	case opMark:
		return "mark iteration"
	default:
		return "reset"
	}
}

// sizeFor maps a number to a request size spread over small, medium and large blocks, with odd sizes.
func sizeFor(class, n uint64) uint64 {
	switch class % 8 {
	case 0, 1, 2:
		return 1 + n%(1*MiB) // small
	case 3, 4, 5:
		return 1*MiB + n%(7*MiB) // a few chunks
	case 6:
		return 8*MiB + n%(40*MiB)
	default:
		return (1 + n%8) * g // whole chunks: exact matches of stitched sizes
	}
}

// run applies ops, checking after each; OOM is allowed (the capacity is small on purpose) but must
// be a well-formed *OutOfMemoryError that leaves the engine consistent.
func (h *harness) run(ops []op, describe func() string) {
	for i, o := range ops {
		ctx := fmt.Sprintf("%s, op %d: %v", describe(), i, o)
		switch o.kind {
		case opAlloc:
			_, err := h.alloc(o.size, o.stream)
			if err != nil {
				var oom *stitch.OutOfMemoryError
				require.True(h.t, errors.As(err, &oom), "%s: %v", ctx, err)
				require.ErrorIs(h.t, err, stitch.ErrOutOfMemory, ctx)
				require.Equal(h.t, o.size, oom.Requested, ctx)
			}
		case opFree:
			if len(h.ptrs) == 0 {
				continue
			}
			require.NoError(h.t, h.free(h.ptrs[o.pick%len(h.ptrs)]), ctx)
		case opEmptyCache:
			require.NoError(h.t, h.e.EmptyCache(), ctx)
		case opReset:
			require.NoError(h.t, h.e.Reset(), ctx)
			h.forgetAll()
			require.Zero(h.t, h.e.Stats().ReservedBytes, ctx)
		case opMark:
			h.e.MarkIteration()
		}
		h.check(ctx)
	}
}

// opsFromBytes decodes a fuzzer's bytes into ops, three bytes an op.
func opsFromBytes(data []byte) []op {
	var ops []op
	for len(data) >= 3 {
		a, b, c := data[0], data[1], data[2]
		data = data[3:]
		n := uint64(b)<<8 | uint64(c)
		switch {
		case a < 150:
			ops = append(ops, op{kind: opAlloc, size: sizeFor(uint64(a), n*2654435761), stream: stitch.Stream(a % 16 / 15)})
		case a < 244:
			ops = append(ops, op{kind: opFree, pick: int(n)})
		case a < 250:
			ops = append(ops, op{kind: opMark})
		case a < 254:
			ops = append(ops, op{kind: opEmptyCache})
		default:
			ops = append(ops, op{kind: opReset})
		}
	}
	return ops
}
