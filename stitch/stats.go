package stitch

import (
	"fmt"
	"strings"

	"github.com/gmlake/gmlake/internal/units"
)

// Outcome says how a request was served.
type Outcome int

// The outcomes, from cheapest to dearest.
const (
	OutcomeExact     Outcome = iota // a cached block of exactly the rounded size
	OutcomeSplit                    // carved from one free range or a cached view; no driver call
	OutcomeStitch                   // free pieces mapped under a new view
	OutcomeNewChunks                // physical memory created (and combined with free memory)
	NumOutcomes
)

var outcomeNames = [NumOutcomes]string{"exact", "split", "stitch", "new_chunks"}

func (o Outcome) String() string {
	if o < 0 || o >= NumOutcomes {
		return "unknown"
	}
	return outcomeNames[o]
}

// Stats describes an Engine at one moment.
type Stats struct {
	LiveBytes         uint64 // requested bytes of live blocks
	PeakLiveBytes     uint64
	LiveBlocks        int
	ReservedBytes     uint64 // physical bytes created and not released
	PeakReservedBytes uint64
	VirtualBytes      uint64 // virtual bytes reserved: the arena and every view
	StitchedBlocks    int    // views (stitched virtual ranges) held
	CachedBlocks      int    // freed blocks kept for exact reuse
	SmallPages        int    // pages held by the small pool
	Outcomes          OutcomeCounts
	DriverCalls       CallCounts
	RejectedFrees     uint64 // frees refused with an error
	// IterationsFound: iteration beginnings the engine found from the live bytes while the caller
	// marked none (iterfinder.go); it stops counting at the first MarkIteration.
	IterationsFound uint64
}

// OutcomeCounts counts the requests served, by outcome.
type OutcomeCounts struct {
	Exact     uint64 // a cached block of exactly the rounded size
	Split     uint64 // carved from a free range or a cached view, no driver call
	Stitch    uint64 // free pieces mapped under a new view
	NewChunks uint64 // physical memory created
}

// Of is the count of outcome o (0 for an unknown one).
func (c OutcomeCounts) Of(o Outcome) uint64 {
	switch o {
	case OutcomeExact:
		return c.Exact
	case OutcomeSplit:
		return c.Split
	case OutcomeStitch:
		return c.Stitch
	case OutcomeNewChunks:
		return c.NewChunks
	}
	return 0
}

// Total is the number of requests served.
func (c OutcomeCounts) Total() uint64 { return c.Exact + c.Split + c.Stitch + c.NewChunks }

func (c OutcomeCounts) String() string {
	return fmt.Sprintf("exact %d, split %d, stitch %d, new chunks %d", c.Exact, c.Split, c.Stitch, c.NewChunks)
}

func outcomeCounts(a [NumOutcomes]uint64) OutcomeCounts {
	return OutcomeCounts{Exact: a[OutcomeExact], Split: a[OutcomeSplit], Stitch: a[OutcomeStitch], NewChunks: a[OutcomeNewChunks]}
}

// CallCounts counts the engine's driver calls, by Driver method.
type CallCounts struct {
	Create, Release, Reserve, Free, Map, Unmap, SetAccess uint64 // memory
	RecordEvent, EventDone, DestroyEvent, Synchronize     uint64 // streams
	MemInfo                                               uint64
}

// Of is the count of calls of kind k (0 for an unknown kind).
func (c CallCounts) Of(k CallKind) uint64 {
	if k < 0 || k >= NumCallKinds {
		return 0
	}
	return c.array()[k]
}

// Total is the number of driver calls of every kind.
func (c CallCounts) Total() uint64 {
	var n uint64
	for _, v := range c.array() {
		n += v
	}
	return n
}

// String lists the kinds called, with their counts ("12: create 4, map 6, set_access 2").
func (c CallCounts) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", c.Total())
	sep := ": "
	for k, v := range c.array() {
		if v > 0 {
			fmt.Fprintf(&b, "%s%s %d", sep, CallKind(k), v)
			sep = ", "
		}
	}
	return b.String()
}

func (c CallCounts) array() [NumCallKinds]uint64 {
	return [NumCallKinds]uint64{c.Create, c.Release, c.Reserve, c.Free, c.Map, c.Unmap, c.SetAccess,
		c.RecordEvent, c.EventDone, c.DestroyEvent, c.Synchronize, c.MemInfo}
}

func callCounts(a [NumCallKinds]uint64) CallCounts {
	return CallCounts{Create: a[CallCreate], Release: a[CallRelease], Reserve: a[CallReserve], Free: a[CallFree],
		Map: a[CallMap], Unmap: a[CallUnmap], SetAccess: a[CallSetAccess], RecordEvent: a[CallRecordEvent],
		EventDone: a[CallEventDone], DestroyEvent: a[CallDestroyEvent], Synchronize: a[CallSynchronize],
		MemInfo: a[CallMemInfo]}
}

// Fragmentation is 1 − peak live / peak reserved: the share of reserved memory never used at peak.
func (s Stats) Fragmentation() float64 {
	if s.PeakReservedBytes == 0 {
		return 0
	}
	return 1 - float64(s.PeakLiveBytes)/float64(s.PeakReservedBytes)
}

// TotalDriverCalls is the number of driver calls of every kind.
func (s Stats) TotalDriverCalls() uint64 { return s.DriverCalls.Total() }

// String is the statistics in a few labelled lines.
func (s Stats) String() string {
	f := units.FormatBytes
	return fmt.Sprintf("live %s in %d blocks (peak %s); reserved %s (peak %s, fragmentation %.3f); virtual %s\n"+
		"held: %d stitched views, %d cached blocks, %d small pages\n"+
		"requests %d: %s\n"+
		"driver calls %s\n"+
		"rejected frees %d",
		f(s.LiveBytes), s.LiveBlocks, f(s.PeakLiveBytes), f(s.ReservedBytes), f(s.PeakReservedBytes), s.Fragmentation(),
		f(s.VirtualBytes), s.StitchedBlocks, s.CachedBlocks, s.SmallPages,
		s.Outcomes.Total(), s.Outcomes, s.DriverCalls, s.RejectedFrees)
}
