package zero

import (
	"fmt"
	"slices"
)

// Units is the layout of ZeRO stage 3 (and FSDP): the trainable parameters are grouped into units
// (a transformer block's parameters, the parameters outside blocks), each unit is laid out as a
// Layout of its own (padded to ranks × Align elements, cut into equal shards), and a rank keeps
// only its shard of every unit, the shards end to end in one buffer of ShardLen elements. A unit
// is all-gathered from the ranks' shards right before the part of a pass that reads it and freed
// after; its gradient is reduce-scattered back into the shards. Per-unit layouts keep each
// collective to one unit's elements, which a single flat layout could not (a block's parameters
// would straddle shard boundaries at arbitrary offsets).
type Units struct {
	Layouts  []*Layout // per unit; Params indexes Members
	Members  [][]int   // per unit, the parameter indices it holds, ascending
	UnitOf   []int     // per parameter, its unit
	Pos      []int     // per parameter, its index within its unit's Layout
	ShardOff []int     // per unit, where its shard starts in a rank's shard buffer
	ShardLen int       // elements of a rank's shard buffer (the units' ShardLens summed)
	Ranks    int
}

// NewUnits lays out parameters of sizes elements, parameter i in the unit labelled group[i], for
// ranks ranks with shards aligned to align elements (0: DefaultAlign). Labels may be any ints
// (a block index, -1 for outside blocks); units are ordered by label.
func NewUnits(sizes, group []int, ranks, align int) (*Units, error) {
	if len(sizes) != len(group) {
		return nil, fmt.Errorf("%w: %d sizes, %d unit labels", ErrLayout, len(sizes), len(group))
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("%w: no parameters", ErrLayout)
	}
	labels := slices.Compact(slices.Sorted(slices.Values(group)))
	u := &Units{UnitOf: make([]int, len(sizes)), Pos: make([]int, len(sizes)), Ranks: ranks}
	u.Members = make([][]int, len(labels))
	for i, g := range group {
		k, _ := slices.BinarySearch(labels, g)
		u.UnitOf[i], u.Pos[i] = k, len(u.Members[k])
		u.Members[k] = append(u.Members[k], i)
	}
	for _, members := range u.Members {
		s := make([]int, len(members))
		for j, i := range members {
			s[j] = sizes[i]
		}
		l, err := NewLayout(s, ranks, align)
		if err != nil {
			return nil, err
		}
		u.Layouts = append(u.Layouts, l)
		u.ShardOff = append(u.ShardOff, u.ShardLen)
		u.ShardLen += l.ShardLen
	}
	return u, nil
}

// Shard fills shard (ShardLen elements) with rank's shards of every unit of params (one slice
// per parameter).
func (u *Units) Shard(rank int, shard []float32, params [][]float32) error {
	if err := u.check(shard, params); err != nil {
		return err
	}
	if rank < 0 || rank >= u.Ranks {
		return fmt.Errorf("%w: rank %d of %d", ErrLayout, rank, u.Ranks)
	}
	for k, l := range u.Layouts {
		flat := make([]float32, l.Padded)
		if err := l.Flatten(flat, u.unitParams(k, params)); err != nil {
			return err
		}
		lo, hi := l.Shard(rank)
		copy(shard[u.ShardOff[k]:u.ShardOff[k]+l.ShardLen], flat[lo:hi])
	}
	return nil
}

// Assemble is the inverse of Shard over all ranks: shards[r] is rank r's shard buffer; params
// receives every parameter.
func (u *Units) Assemble(params [][]float32, shards [][]float32) error {
	if len(shards) != u.Ranks {
		return fmt.Errorf("%w: %d shard buffers for %d ranks", ErrLayout, len(shards), u.Ranks)
	}
	for _, s := range shards {
		if err := u.check(s, params); err != nil {
			return err
		}
	}
	for k, l := range u.Layouts {
		flat := make([]float32, l.Padded)
		for r, s := range shards {
			lo, hi := l.Shard(r)
			copy(flat[lo:hi], s[u.ShardOff[k]:u.ShardOff[k]+l.ShardLen])
		}
		if err := l.Unflatten(u.unitParams(k, params), flat); err != nil {
			return err
		}
	}
	return nil
}

// unitParams is unit k's parameters of params, in the unit's order (the slices themselves).
func (u *Units) unitParams(k int, params [][]float32) [][]float32 {
	out := make([][]float32, len(u.Members[k]))
	for j, i := range u.Members[k] {
		out[j] = params[i]
	}
	return out
}

func (u *Units) check(shard []float32, params [][]float32) error {
	if len(shard) != u.ShardLen {
		return fmt.Errorf("%w: shard buffer of %d elements, units need %d", ErrLayout, len(shard), u.ShardLen)
	}
	if len(params) != len(u.UnitOf) {
		return fmt.Errorf("%w: %d parameters, units hold %d", ErrLayout, len(params), len(u.UnitOf))
	}
	return nil
}
