package bench

import (
	"math/bits"
	"time"

	"github.com/gmlake/gmlake/trace"
)

// IterationNeeds is what one iteration of a trace asks of any allocator, from the trace alone.
//
// An iteration is novel when it needs something that nothing earlier needed: more live memory than
// the peak of every earlier iteration (the setup before the first marker counts as earlier), or a
// single block larger than every earlier request. In a novel iteration an allocator that reserves
// little more than was ever live must call the driver, whatever its policy: for more memory, or for
// a block larger than any it holds. In any other iteration (a "repeat" iteration) every need was
// met before, so a driver call there is the allocator's choice, not the trace's.
//
// Forced is the part of that argument that holds for every allocator, with no assumption on its
// policy (see ForcedPeak): the iteration's peak is so far above every earlier one that any online
// allocator meeting the fragmentation target must call the driver in it.
type IterationNeeds struct {
	Iteration  int    `json:"iteration"`   // the marker's number
	PeakActive uint64 `json:"peak_active"` // peak of requested live bytes during the iteration
	PeakBefore uint64 `json:"peak_before"` // peak of requested live bytes before the iteration (setup included)
	Largest    uint64 `json:"largest"`     // largest single request in the iteration, 0 if none
	NewPeak    bool   `json:"new_peak"`    // PeakActive exceeds the peak of everything earlier
	NewLargest bool   `json:"new_largest"` // Largest exceeds every earlier request
	Forced     bool   `json:"forced"`      // ForcedPeak(PeakBefore, PeakActive): a driver call is unavoidable
}

// Novel says whether the iteration needed something no earlier part of the trace did.
func (n IterationNeeds) Novel() bool { return n.NewPeak || n.NewLargest }

// FragmentationTargetPPM is issue 3's target for uncapped fragmentation (1 - peak active / peak
// reserved <= 0.02), in parts per million so that the bound is computed in exact integers.
const FragmentationTargetPPM = 20_000

// FragmentationTarget is FragmentationTargetPPM as a fraction, 0.02.
const FragmentationTarget = float64(FragmentationTargetPPM) / 1e6

// ForcedPeak says whether an iteration whose peak of live requested bytes is peak, after a trace
// whose highest peak so far is before, forces a driver call on every online allocator that meets
// the fragmentation target on every trace: whether 1 - before/peak > FragmentationTarget.
//
// The argument. An allocator that makes no driver call during the iteration holds the same memory
// throughout it, so it holds at least peak bytes when the iteration begins. Cut the trace just
// before the iteration: on that trace its peak reserved is at least peak and its peak active is
// before, so its fragmentation is at least 1 - before/peak. An online allocator cannot know
// whether the trace ends there, so if it meets the target on every trace it must hold less than
// before/(1 - target) bytes when the iteration begins, and must call the driver in an iteration
// whose peak exceeds that. At exactly the target (fragmentation 0.02) nothing is forced.
func ForcedPeak(before, peak uint64) bool {
	// before < peak*(1-target), as before*1e6 < peak*(1e6-ppm) in 128 bits.
	bh, bl := bits.Mul64(before, 1e6)
	ph, pl := bits.Mul64(peak, 1e6-FragmentationTargetPPM)
	return bh < ph || (bh == ph && bl < pl)
}

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
		cur.PeakBefore = peakBefore
		cur.NewPeak, cur.NewLargest = cur.PeakActive > peakBefore, cur.Largest > maxAsked
		cur.Forced = ForcedPeak(peakBefore, cur.PeakActive)
		peakBefore, maxAsked = max(peakBefore, cur.PeakActive), max(maxAsked, cur.Largest)
		out = append(out, *cur)
	}
	for _, o := range p.ops {
		switch o.Kind {
		case trace.Alloc:
			active += o.Size
			if cur == nil {
				peakBefore, maxAsked = max(peakBefore, active), max(maxAsked, o.Size)
				continue
			}
			cur.PeakActive, cur.Largest = max(cur.PeakActive, active), max(cur.Largest, o.Size)
		case trace.Free:
			active -= o.Size
		case trace.Iter:
			closeIteration()
			cur = &IterationNeeds{Iteration: int(o.Slot), PeakActive: active}
		}
	}
	closeIteration()
	return out
}

// iterationSet is the set of iteration numbers of which at least one marker has the property.
func iterationSet(needs []IterationNeeds, has func(IterationNeeds) bool) map[int]bool {
	set := make(map[int]bool)
	for _, n := range needs {
		if has(n) {
			set[n.Iteration] = true
		}
	}
	return set
}

// iterationList is the iteration numbers of the markers with the property, in marker order.
func iterationList(needs []IterationNeeds, has func(IterationNeeds) bool) []int {
	out := make([]int, 0, len(needs))
	for _, n := range needs {
		if has(n) {
			out = append(out, n.Iteration)
		}
	}
	return out
}

func forced(n IterationNeeds) bool { return n.Forced }

// steadySplit sums a per-iteration figure over the steady iterations (SteadyFrom on) in a set and
// over the others.
type steadySplit[V uint64 | time.Duration] struct {
	in, out       V
	inIts, outIts int
}

func splitSteady[V uint64 | time.Duration](perIter map[int]V, set map[int]bool) steadySplit[V] {
	var s steadySplit[V]
	for it, v := range perIter {
		switch {
		case it < SteadyFrom:
		case set[it]:
			s.in += v
			s.inIts++
		default:
			s.out += v
			s.outIts++
		}
	}
	return s
}

// setNovelty fills the report's novelty and forcing figures from the uncapped run: the novel and
// forced iterations, and the steady ones (SteadyFrom on) split into novel and repeat, and into
// forced and unforced, in driver calls and, when the run is timed, in estimated driver time.
func (rep *Report) setNovelty(p *Prepared, run *Run) {
	needs := p.Needs()
	if needs == nil {
		return
	}
	novel, forcedSet := iterationSet(needs, IterationNeeds.Novel), iterationSet(needs, forced)
	rep.NovelIterations = iterationList(needs, IterationNeeds.Novel)
	rep.ForcedIterations = iterationList(needs, forced)
	byNovelty, byForcing := splitSteady(run.IterCalls, novel), splitSteady(run.IterCalls, forcedSet)
	if byNovelty.inIts+byNovelty.outIts == 0 {
		return
	}
	steady := byNovelty.inIts + byNovelty.outIts
	rep.SteadyIters, rep.SteadyNovelIters, rep.SteadyForcedIters = &steady, &byNovelty.inIts, &byForcing.inIts
	rep.SteadyNovelCallsPerIter = meanOf(byNovelty.in, byNovelty.inIts)
	rep.SteadyRepeatCallsPerIter = meanOf(byNovelty.out, byNovelty.outIts)
	rep.SteadyForcedCallsPerIter = meanOf(byForcing.in, byForcing.inIts)
	rep.SteadyUnforcedCallsPerIter = meanOf(byForcing.out, byForcing.outIts)
	if !run.Timed {
		return
	}
	timeByNovelty, timeByForcing := splitSteady(run.IterTime, novel), splitSteady(run.IterTime, forcedSet)
	rep.SteadyNovelDriverMsPerIter = msMean(timeByNovelty.in, timeByNovelty.inIts)
	rep.SteadyRepeatDriverMsPerIter = msMean(timeByNovelty.out, timeByNovelty.outIts)
	rep.SteadyForcedDriverMsPerIter = msMean(timeByForcing.in, timeByForcing.inIts)
	rep.SteadyUnforcedDriverMsPerIter = msMean(timeByForcing.out, timeByForcing.outIts)
}

// meanOf is sum/n, or nil when n is 0.
func meanOf(sum uint64, n int) *float64 {
	if n == 0 {
		return nil
	}
	v := float64(sum) / float64(n)
	return &v
}

// msMean is sum/n in milliseconds, or nil when n is 0.
func msMean(sum time.Duration, n int) *float64 {
	if n == 0 {
		return nil
	}
	v := float64(sum) / float64(time.Millisecond) / float64(n)
	return &v
}
