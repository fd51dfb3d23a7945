package btree

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gmlake/gmlake/internal/treap"
)

// BenchmarkFloorEvicted times one Floor with the caches evicted before it (8 MiB written), as the
// executor's work between two requests leaves them on a GPU host, in this package's map and in
// the treap it replaces for the engine's address indexes, both holding n entries of a 40-byte
// value (the engine's tnode) in random insertion order. cold-ns/op is the lookup alone.
func BenchmarkFloorEvicted(b *testing.B) {
	for _, n := range []int{500, 5000, 50000} {
		var m Map[[40]byte]
		var t treap.Tree[[40]byte]
		for _, k := range rand.New(rand.NewPCG(1, uint64(n))).Perm(n) {
			m.Insert(uint64(k)<<20, [40]byte{})
			t.Insert(uint64(k)<<20, 0, 0, [40]byte{})
		}
		lookups := map[string]func(k uint64) uint64{
			"btree": func(k uint64) uint64 { return m.Floor(k).Key() },
			"treap": func(k uint64) uint64 { hi, _ := t.Floor(k, 0).Key(); return hi },
		}
		for _, name := range []string{"btree", "treap"} {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				floor := lookups[name]
				evict := make([]byte, 8<<20)
				rng := rand.New(rand.NewPCG(3, 4))
				var in time.Duration
				var sink uint64
				for b.Loop() {
					for i := 0; i < len(evict); i += 64 {
						evict[i]++
					}
					k := rng.Uint64N(uint64(n))<<20 + 5
					start := time.Now()
					sink += floor(k)
					in += time.Since(start)
				}
				b.ReportMetric(float64(in.Nanoseconds())/float64(b.N), "cold-ns/op")
				if sink == 1 {
					b.Log(sink)
				}
			})
		}
	}
}
