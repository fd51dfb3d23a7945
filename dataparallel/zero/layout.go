package zero

import (
	"errors"
	"fmt"
)

// ErrLayout is wrapped by errors about a bad layout or a buffer that does not fit one.
var ErrLayout = errors.New("zero: bad layout")

// DefaultAlign is the element alignment of shards: 128 float32s = 512 bytes, cudaMalloc's
// alignment, so every shard of a flat device buffer starts on an aligned address.
const DefaultAlign = 128

// Slot is where one parameter lies in the flat buffer.
type Slot struct {
	Offset int // first element
	Len    int // elements
}

// Piece is the part of one parameter inside one shard.
type Piece struct {
	Param    int // index of the parameter
	ParamOff int // first element of the piece within the parameter
	FlatOff  int // first element of the piece within the flat buffer
	Len      int
}

// Layout places parameters of the given sizes end to end and cuts the padded buffer into equal
// shards, one per rank.
type Layout struct {
	Params   []Slot
	Total    int // elements of all parameters
	Padded   int // Total rounded up to a multiple of Ranks*Align
	Ranks    int
	Align    int
	ShardLen int // Padded / Ranks
}

// NewLayout lays out parameters of sizes elements (in that order) for ranks ranks, each shard a
// multiple of align elements (0: DefaultAlign).
func NewLayout(sizes []int, ranks, align int) (*Layout, error) {
	if ranks < 1 {
		return nil, fmt.Errorf("%w: %d ranks", ErrLayout, ranks)
	}
	if align == 0 {
		align = DefaultAlign
	}
	if align < 1 {
		return nil, fmt.Errorf("%w: alignment %d", ErrLayout, align)
	}
	l := &Layout{Params: make([]Slot, len(sizes)), Ranks: ranks, Align: align}
	for i, n := range sizes {
		if n < 1 {
			return nil, fmt.Errorf("%w: parameter %d has %d elements", ErrLayout, i, n)
		}
		l.Params[i] = Slot{Offset: l.Total, Len: n}
		l.Total += n
	}
	unit := ranks * align
	l.Padded = (l.Total + unit - 1) / unit * unit
	if l.Padded == 0 {
		l.Padded = unit
	}
	l.ShardLen = l.Padded / ranks
	return l, nil
}

// Shard is the range [lo, hi) of the flat buffer that rank owns.
func (l *Layout) Shard(rank int) (lo, hi int) {
	return rank * l.ShardLen, (rank + 1) * l.ShardLen
}

// Pieces lists the parts of parameters inside rank's shard, in flat order. Padding belongs to no
// parameter and is left out.
func (l *Layout) Pieces(rank int) []Piece {
	lo, hi := l.Shard(rank)
	var out []Piece
	for i, s := range l.Params {
		a, b := max(lo, s.Offset), min(hi, s.Offset+s.Len)
		if a < b {
			out = append(out, Piece{Param: i, ParamOff: a - s.Offset, FlatOff: a, Len: b - a})
		}
	}
	return out
}

// Flatten copies params (one slice per parameter, in layout order) into flat, which must be
// Padded long; padding is zeroed.
func (l *Layout) Flatten(flat []float32, params [][]float32) error {
	if err := l.checkFlat(flat, params); err != nil {
		return err
	}
	for i, s := range l.Params {
		copy(flat[s.Offset:s.Offset+s.Len], params[i])
	}
	clear(flat[l.Total:])
	return nil
}

// Unflatten copies flat back into params.
func (l *Layout) Unflatten(params [][]float32, flat []float32) error {
	if err := l.checkFlat(flat, params); err != nil {
		return err
	}
	for i, s := range l.Params {
		copy(params[i], flat[s.Offset:s.Offset+s.Len])
	}
	return nil
}

func (l *Layout) checkFlat(flat []float32, params [][]float32) error {
	if len(flat) != l.Padded {
		return fmt.Errorf("%w: flat buffer of %d elements, layout needs %d", ErrLayout, len(flat), l.Padded)
	}
	if len(params) != len(l.Params) {
		return fmt.Errorf("%w: %d parameters, layout has %d", ErrLayout, len(params), len(l.Params))
	}
	for i, s := range l.Params {
		if len(params[i]) != s.Len {
			return fmt.Errorf("%w: parameter %d has %d elements, layout says %d", ErrLayout, i, len(params[i]), s.Len)
		}
	}
	return nil
}
