package stitch

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
	Outcomes          [NumOutcomes]uint64
	DriverCalls       [NumCallKinds]uint64
	RejectedFrees     uint64 // frees refused with an error
}

// Fragmentation is 1 − peak live / peak reserved: the share of reserved memory never used at peak.
func (s Stats) Fragmentation() float64 {
	if s.PeakReservedBytes == 0 {
		return 0
	}
	return 1 - float64(s.PeakLiveBytes)/float64(s.PeakReservedBytes)
}

// TotalDriverCalls is the number of driver calls of every kind.
func (s Stats) TotalDriverCalls() uint64 {
	var n uint64
	for _, c := range s.DriverCalls {
		n += c
	}
	return n
}
