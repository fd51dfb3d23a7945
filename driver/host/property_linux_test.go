package host

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
)

// The property test drives a Driver with random calls — valid and invalid — next to a model of what
// every physical granule holds and where it is mapped. After every call the driver's answer must
// match the model's prediction and every mapped granule, read through every mapping, must hold what
// the model says (zero for memory never written, including reused holes). FuzzDriver feeds it
// fuzzer-chosen seeds; TestDriverProperty a fixed set.

const modelCapacity = 24 // granules

type modelMapping struct {
	off, n    uint64 // granules into the range
	handle    stitch.PhysHandle
	regionOff uint64 // granules into the region
}

type modelRange struct {
	seq      int // order of reservation: addresses differ between runs (ASLR), this does not
	granules uint64
	mappings []modelMapping
}

type model struct {
	t        *testing.T
	d        *Driver
	rng      *rand.Rand
	reserved int                          // ranges reserved so far
	regions  map[stitch.PhysHandle][]byte // per granule: the byte written there (0: never)
	mapped   map[stitch.PhysHandle]int
	ranges   map[uintptr]*modelRange
	inUse    uint64
	log      []string
	// successful maps and writes, so that a test can tell the run reached the interesting states
	maps, writes int
}

func runDriverModel(t *testing.T, seed uint64, steps int) *model {
	d := newTestDriver(t, WithCapacity(modelCapacity*g))
	m := &model{t: t, d: d, rng: rand.New(rand.NewPCG(seed, seed>>32)),
		regions: map[stitch.PhysHandle][]byte{}, mapped: map[stitch.PhysHandle]int{}, ranges: map[uintptr]*modelRange{}}
	defer func() {
		if t.Failed() {
			t.Logf("seed %d, last calls:\n%v", seed, m.log[max(0, len(m.log)-10):])
		}
	}()
	for range steps {
		switch m.rng.IntN(8) {
		case 0, 1:
			m.create()
		case 2:
			m.release()
		case 3:
			m.reserve()
		case 4:
			m.free()
		case 5:
			m.mapSome()
		case 6:
			m.unmap()
		case 7:
			m.write()
		}
		m.verify()
		if t.Failed() {
			break
		}
	}
	return m
}

func (m *model) note(format string, args ...any) { m.log = append(m.log, fmt.Sprintf(format, args...)) }

func (m *model) expect(err, want error, call string) {
	m.t.Helper()
	if want == nil {
		require.NoError(m.t, err, call)
	} else {
		require.ErrorIs(m.t, err, want, call)
	}
}

func (m *model) create() {
	n := 1 + m.rng.Uint64N(4)
	h, err := m.d.Create(n * g)
	m.note("create %d -> %d %v", n, h, err)
	if m.inUse+n > modelCapacity {
		m.expect(err, stitch.ErrOutOfMemory, "create beyond capacity")
		return
	}
	m.expect(err, nil, "create")
	m.regions[h] = make([]byte, n)
	m.inUse += n
}

func (m *model) release() {
	h := m.pickRegion()
	err := m.d.Release(h)
	m.note("release %d -> %v", h, err)
	switch {
	case m.regions[h] == nil:
		m.expect(err, ErrUnknownHandle, "release unknown")
	case m.mapped[h] > 0:
		m.expect(err, ErrStillMapped, "release mapped")
	default:
		m.expect(err, nil, "release")
		m.inUse -= uint64(len(m.regions[h]))
		delete(m.regions, h)
	}
}

func (m *model) reserve() {
	n := 1 + m.rng.Uint64N(6)
	addr, err := m.d.Reserve(n * g)
	m.note("reserve %d -> %#x %v", n, addr, err)
	m.expect(err, nil, "reserve")
	m.reserved++
	m.ranges[addr] = &modelRange{seq: m.reserved, granules: n}
}

func (m *model) free() {
	addr, r := m.pickRange()
	if r == nil {
		return
	}
	err := m.d.Free(addr, r.granules*g)
	m.note("free %#x -> %v", addr, err)
	if len(r.mappings) > 0 {
		m.expect(err, ErrStillMapped, "free mapped range")
		return
	}
	m.expect(err, nil, "free")
	delete(m.ranges, addr)
}

func (m *model) mapSome() {
	addr, r := m.pickRange()
	if r == nil {
		return
	}
	h := m.pickRegion()
	off := m.rng.Uint64N(r.granules)
	n := 1 + m.rng.Uint64N(3)
	regionOff := m.rng.Uint64N(4)
	if size := uint64(len(m.regions[h])); size > 0 && m.rng.IntN(4) > 0 {
		// Mostly aim at a call that fits, so that the run reaches mapped states.
		n = 1 + m.rng.Uint64N(min(r.granules-off, size))
		regionOff = m.rng.Uint64N(size - n + 1)
	}
	err := m.d.Map(addr+uintptr(off*g), n*g, h, regionOff*g)
	m.note("map %#x+%d (%d granules) to %d+%d -> %v", addr, off, n, h, regionOff, err)
	switch {
	case off+n > r.granules:
		m.expect(err, ErrOutOfBounds, "map past the range")
	case m.regions[h] == nil:
		m.expect(err, ErrUnknownHandle, "map unknown region")
	case regionOff+n > uint64(len(m.regions[h])):
		m.expect(err, ErrOutOfBounds, "map past the region")
	case r.overlaps(off, n):
		m.expect(err, ErrOverlap, "map over a mapping")
	default:
		m.expect(err, nil, "map")
		r.mappings = append(r.mappings, modelMapping{off: off, n: n, handle: h, regionOff: regionOff})
		m.mapped[h]++
		m.maps++
	}
}

func (m *model) unmap() {
	addr, r := m.pickRange()
	if r == nil {
		return
	}
	lo := m.rng.Uint64N(r.granules)
	hi := lo + 1 + m.rng.Uint64N(r.granules-lo)
	if len(r.mappings) > 0 && m.rng.IntN(4) > 0 {
		mm := r.mappings[m.rng.IntN(len(r.mappings))] // mostly one whole mapping
		lo, hi = mm.off, mm.off+mm.n
	}
	err := m.d.Unmap(addr+uintptr(lo*g), (hi-lo)*g)
	m.note("unmap %#x [%d,%d) -> %v", addr, lo, hi, err)
	var inside, cut int
	for _, mm := range r.mappings {
		switch {
		case mm.off >= lo && mm.off+mm.n <= hi:
			inside++
		case mm.off < hi && mm.off+mm.n > lo:
			cut++
		}
	}
	if inside == 0 || cut > 0 {
		m.expect(err, ErrNotMapped, "unmap of nothing or of part of a mapping")
		return
	}
	m.expect(err, nil, "unmap")
	kept := r.mappings[:0]
	for _, mm := range r.mappings {
		if mm.off >= lo && mm.off+mm.n <= hi {
			m.mapped[mm.handle]--
		} else {
			kept = append(kept, mm)
		}
	}
	r.mappings = kept
}

// write stores a fresh byte at the start, middle and end of one mapped granule.
func (m *model) write() {
	var addrs []uintptr
	for _, a := range m.rangeAddrs() {
		if len(m.ranges[a].mappings) > 0 {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return
	}
	addr := addrs[m.rng.IntN(len(addrs))]
	r := m.ranges[addr]
	mm := r.mappings[m.rng.IntN(len(r.mappings))]
	k := m.rng.Uint64N(mm.n)
	v := byte(1 + m.rng.IntN(255))
	b := bytesAt(addr+uintptr((mm.off+k)*g), g)
	b[0], b[g/2], b[g-1] = v, v, v
	m.regions[mm.handle][mm.regionOff+k] = v
	m.writes++
	m.note("write %#x granule %d = %d", addr, mm.off+k, v)
}

func (m *model) verify() {
	for addr, r := range m.ranges {
		for _, mm := range r.mappings {
			for k := range mm.n {
				want := m.regions[mm.handle][mm.regionOff+k]
				b := bytesAt(addr+uintptr((mm.off+k)*g), g)
				if b[0] != want || b[g/2] != want || b[g-1] != want {
					m.t.Errorf("range %#x granule %d (region %d granule %d): read %d %d %d, want %d",
						addr, mm.off+k, mm.handle, mm.regionOff+k, b[0], b[g/2], b[g-1], want)
					return
				}
			}
		}
	}
	free, _, err := m.d.MemInfo()
	require.NoError(m.t, err)
	require.Equal(m.t, (modelCapacity-m.inUse)*g, free)
}

// pickRegion returns a live handle, or now and then one that is not (never issued or released).
func (m *model) pickRegion() stitch.PhysHandle {
	if len(m.regions) == 0 || m.rng.IntN(10) == 0 {
		return stitch.PhysHandle(1 + m.rng.IntN(int(m.d.nextHandle)+1))
	}
	handles := slices.Sorted(maps.Keys(m.regions)) // sorted: a seed must replay exactly
	return handles[m.rng.IntN(len(handles))]
}

func (m *model) pickRange() (uintptr, *modelRange) {
	if len(m.ranges) == 0 {
		return 0, nil
	}
	addrs := m.rangeAddrs()
	addr := addrs[m.rng.IntN(len(addrs))]
	return addr, m.ranges[addr]
}

// rangeAddrs returns the reserved ranges in reservation order, not address order: addresses differ
// between runs (ASLR), and a seed must replay exactly.
func (m *model) rangeAddrs() []uintptr {
	return slices.SortedFunc(maps.Keys(m.ranges), func(a, b uintptr) int { return m.ranges[a].seq - m.ranges[b].seq })
}

func (r *modelRange) overlaps(off, n uint64) bool {
	for _, mm := range r.mappings {
		if mm.off < off+n && off < mm.off+mm.n {
			return true
		}
	}
	return false
}

func TestDriverProperty(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := runDriverModel(t, seed, 500)
			t.Logf("maps %d writes %d ranges %d regions %d", m.maps, m.writes, len(m.ranges), len(m.regions))
			require.Greater(t, m.maps, 10, "the run mapped memory")
			require.Greater(t, m.writes, 20, "the run wrote through mappings")
		})
	}
}

func FuzzDriver(f *testing.F) {
	f.Add(uint64(1))
	f.Add(uint64(1 << 40))
	f.Fuzz(func(t *testing.T, seed uint64) { runDriverModel(t, seed, 200) })
}
