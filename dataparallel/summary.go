package dataparallel

import "github.com/gmlake/gmlake/stitch"

// Summary condenses per-device statistics the way a data-parallel job is judged: the fullest
// device decides whether the job fits, so peaks are maxima over devices; totals are sums.
type Summary struct {
	Devices             int
	MaxPeakLiveBytes    uint64  // largest per-device peak of requested live bytes
	MaxPeakReserved     uint64  // largest per-device peak of physical bytes held
	MaxFragmentation    float64 // largest per-device 1 - peak live / peak reserved
	TotalReserved       uint64  // physical bytes held now, all devices together
	TotalDriverCalls    uint64  // driver calls of every kind, all devices together
	TotalStitchedBlocks int     // stitched views held, all devices together
}

// Summarize folds per-device statistics (as Pools.Stats returns them) into a Summary.
func Summarize(stats []stitch.Stats) Summary {
	s := Summary{Devices: len(stats)}
	for _, st := range stats {
		s.MaxPeakLiveBytes = max(s.MaxPeakLiveBytes, st.PeakLiveBytes)
		s.MaxPeakReserved = max(s.MaxPeakReserved, st.PeakReservedBytes)
		s.MaxFragmentation = max(s.MaxFragmentation, st.Fragmentation())
		s.TotalReserved += st.ReservedBytes
		s.TotalDriverCalls += st.TotalDriverCalls()
		s.TotalStitchedBlocks += st.StitchedBlocks
	}
	return s
}
