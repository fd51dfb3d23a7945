package intmap

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMapAnswersAsGoMap plays random puts, deletes and lookups on a Map and on a Go map, with
// keys drawn so that many share a home slot (aligned pointers, small sizes, the key 0), and
// checks every answer, the length and the iteration against the Go map's.
func TestMapAnswersAsGoMap(t *testing.T) {
	for _, draw := range []struct {
		name string
		key  func(r *rand.Rand) uint64
	}{
		{"aligned pointers", func(r *rand.Rand) uint64 { return 0x7f0000000000 + r.Uint64N(512)<<21 }},
		{"small keys with 0", func(r *rand.Rand) uint64 { return r.Uint64N(64) }},
		{"any key", func(r *rand.Rand) uint64 { return r.Uint64() >> r.UintN(64) }},
	} {
		t.Run(draw.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var m Map[int]
			want := map[uint64]int{}
			for step := range 20000 {
				k := draw.key(r)
				switch op := r.IntN(10); {
				case op < 5:
					m.Put(k, step)
					want[k] = step
				case op < 8:
					m.Delete(k)
					delete(want, k)
				default:
					v, ok := m.Get(k)
					w, wok := want[k]
					require.Equal(t, wok, ok, "step %d: key %#x held", step, k)
					require.Equal(t, w, v, "step %d: key %#x", step, k)
					require.Equal(t, w, m.At(k))
				}
				require.Equal(t, len(want), m.Len(), "step %d", step)
				if step%997 == 0 {
					got := map[uint64]int{}
					for k, v := range m.All() {
						_, dup := got[k]
						require.False(t, dup, "key %#x yielded twice", k)
						got[k] = v
					}
					require.Equal(t, want, got, "step %d: All", step)
				}
			}
			for k, w := range want {
				require.Equal(t, w, m.At(k))
			}
		})
	}
}

func TestClearEmptiesAndKeepsWorking(t *testing.T) {
	var m Map[string]
	for k := range uint64(100) {
		m.Put(k, "x")
	}
	m.Clear()
	require.Equal(t, 0, m.Len())
	for k := range uint64(100) {
		_, ok := m.Get(k)
		require.False(t, ok, "key %d after Clear", k)
	}
	m.Put(7, "y")
	m.Put(0, "z")
	require.Equal(t, 2, m.Len())
	require.Equal(t, "y", m.At(7))
	require.Equal(t, "z", m.At(0))
}

func TestZeroMapIsEmpty(t *testing.T) {
	var m Map[*int]
	require.Nil(t, m.At(42))
	m.Delete(42)
	m.Delete(0)
	require.Equal(t, 0, m.Len())
	for range m.All() {
		t.Fatal("the zero Map yields a key")
	}
}

func TestAllStopsWhenAsked(t *testing.T) {
	var m Map[int]
	for k := range uint64(50) {
		m.Put(k, int(k))
	}
	n := 0
	for range m.All() {
		n++
		if n == 3 {
			break
		}
	}
	require.Equal(t, 3, n)
}

// BenchmarkLookup times a hit among 4,096 pointer keys, in a Map and in a Go map.
func BenchmarkLookup(b *testing.B) {
	keys := make([]uint64, 4096)
	for i := range keys {
		keys[i] = 0x7f0000000000 + uint64(i)<<9
	}
	b.Run("intmap", func(b *testing.B) {
		var m Map[*int]
		v := new(int)
		for _, k := range keys {
			m.Put(k, v)
		}
		for i := 0; b.Loop(); i++ {
			if m.At(keys[i&4095]) == nil {
				b.Fatal("miss")
			}
		}
	})
	b.Run("go map", func(b *testing.B) {
		m := map[uint64]*int{}
		v := new(int)
		for _, k := range keys {
			m[k] = v
		}
		for i := 0; b.Loop(); i++ {
			if m[keys[i&4095]] == nil {
				b.Fatal("miss")
			}
		}
	})
}
