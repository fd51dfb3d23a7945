package bench

import "github.com/gmlake/gmlake/trace"

// IterationNeeds is what one iteration of a trace asks of any allocator, from the trace alone.
//
// An iteration is novel when it needs something that nothing earlier needed: more live memory than
// the peak of every earlier iteration (the setup before the first marker counts as earlier), or a
// single block larger than every earlier request. In a novel iteration an allocator that reserves
// little more than was ever live must call the driver, whatever its policy: for more memory, or for
// a block larger than any it holds. In any other iteration (a "repeat" iteration) every need was
// met before, so a driver call there is the allocator's choice, not the trace's.
type IterationNeeds struct {
	Iteration  int    `json:"iteration"`   // the marker's number
	PeakActive uint64 `json:"peak_active"` // peak of requested live bytes during the iteration
	Largest    uint64 `json:"largest"`     // largest single request in the iteration, 0 if none
	NewPeak    bool   `json:"new_peak"`    // PeakActive exceeds the peak of everything earlier
	NewLargest bool   `json:"new_largest"` // Largest exceeds every earlier request
}

// Novel says whether the iteration needed something no earlier part of the trace did.
func (n IterationNeeds) Novel() bool { return n.NewPeak || n.NewLargest }

// Needs returns the needs of each iteration of p, in marker order (nil for a trace without
// markers). The bytes live when an iteration begins count towards its peak.
func (p *Prepared) Needs() []IterationNeeds {
	var (
		out                  []IterationNeeds
		active               uint64
		peakBefore, maxAsked uint64 // over everything before the iteration in progress
		cur                  *IterationNeeds
	)
	closeIteration := func() {
		if cur == nil {
			return
		}
		cur.NewPeak, cur.NewLargest = cur.PeakActive > peakBefore, cur.Largest > maxAsked
		peakBefore, maxAsked = max(peakBefore, cur.PeakActive), max(maxAsked, cur.Largest)
		out = append(out, *cur)
	}
	for _, o := range p.ops {
		switch o.kind {
		case trace.Alloc:
			active += o.size
			if cur == nil {
				peakBefore, maxAsked = max(peakBefore, active), max(maxAsked, o.size)
				continue
			}
			cur.PeakActive, cur.Largest = max(cur.PeakActive, active), max(cur.Largest, o.size)
		case trace.Free:
			active -= o.size
		case trace.Iter:
			closeIteration()
			cur = &IterationNeeds{Iteration: int(o.slot), PeakActive: active}
		}
	}
	closeIteration()
	return out
}

// novelIterations is the set of iteration numbers of which at least one marker is novel.
func novelIterations(needs []IterationNeeds) map[int]bool {
	novel := make(map[int]bool)
	for _, n := range needs {
		if n.Novel() {
			novel[n.Iteration] = true
		}
	}
	return novel
}

// setNovelty fills the report's novelty figures from the uncapped run: the novel iterations, and
// the steady ones (SteadyFrom on) split into novel and repeat.
func (rep *Report) setNovelty(p *Prepared, run *Run) {
	needs := p.Needs()
	if needs == nil {
		return
	}
	novel := novelIterations(needs)
	rep.NovelIterations = make([]int, 0, len(novel))
	for _, n := range needs {
		if n.Novel() {
			rep.NovelIterations = append(rep.NovelIterations, n.Iteration)
		}
	}
	var novelCalls, repeatCalls uint64
	var novelIters, repeatIters int
	for it, c := range run.IterCalls {
		switch {
		case it < SteadyFrom:
		case novel[it]:
			novelCalls += c
			novelIters++
		default:
			repeatCalls += c
			repeatIters++
		}
	}
	if novelIters+repeatIters == 0 {
		return
	}
	steady := novelIters + repeatIters
	rep.SteadyIters, rep.SteadyNovelIters = &steady, &novelIters
	rep.SteadyNovelCallsPerIter = meanOf(novelCalls, novelIters)
	rep.SteadyRepeatCallsPerIter = meanOf(repeatCalls, repeatIters)
}

// meanOf is sum/n, or nil when n is 0.
func meanOf(sum uint64, n int) *float64 {
	if n == 0 {
		return nil
	}
	v := float64(sum) / float64(n)
	return &v
}
