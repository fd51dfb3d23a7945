package baseline

import (
	"math/rand/v2"
	"testing"

	"github.com/gmlake/gmlake/internal/units"
)

// churnLive is how many blocks the churn benchmarks keep allocated: enough for trees of a few
// hundred free blocks, as a training step leaves behind.
const churnLive = 512

// benchChurn frees a random live block and allocates one of a random size per step, so that the
// free-block tree is searched, split and coalesced on every operation. Metric: ns/op is one pair.
func benchChurn(b *testing.B, a Allocator) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	size := func() uint64 { return 512 + rng.Uint64N(4*units.MiB) }
	type live struct {
		ptr  uintptr
		size uint64
	}
	blocks := make([]live, churnLive)
	for i := range blocks {
		s := size()
		p, err := a.Alloc(s, 0)
		if err != nil {
			b.Fatal(err)
		}
		blocks[i] = live{p, s}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		i := rng.IntN(len(blocks))
		if err := a.Free(blocks[i].ptr, blocks[i].size); err != nil {
			b.Fatal(err)
		}
		s := size()
		p, err := a.Alloc(s, 0)
		if err != nil {
			b.Fatal(err)
		}
		blocks[i] = live{p, s}
	}
}

// BenchmarkFirstFitChurn measures a free and an allocation of the Gorgonia pool's first fit.
func BenchmarkFirstFitChurn(b *testing.B) {
	f, err := NewFirstFit(NewSimDevice(), 64*units.GiB)
	if err != nil {
		b.Fatal(err)
	}
	benchChurn(b, f)
}

// BenchmarkCachingChurn measures a free and an allocation of the PyTorch-style caching allocator.
func BenchmarkCachingChurn(b *testing.B) { benchChurn(b, NewCaching(NewSimDevice())) }
