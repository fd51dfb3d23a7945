package traincmd

import (
	"math"
	"slices"
)

// Rounds is how the training commands order their timed runs when each allocator runs more than
// once (--rounds): forward in even rounds and backward in odd ones (A B, B A, A B, ...), so that a
// drift of the GPU's speed over the process (clocks, caches, the driver's own warm-up) falls on
// every allocator alike. On the H200 the second of two back-to-back runs of the same training was
// about 3% slower whichever allocator ran second (results/cnn/H200.md); one round cannot separate
// allocators closer than that.
type Rounds struct {
	Allocators []string
	N          int // rounds; below 1 means 1
}

// Order gives the allocators of each round, in the order they run.
func (r Rounds) Order() [][]string {
	n := max(r.N, 1)
	order := make([][]string, n)
	for i := range order {
		order[i] = slices.Clone(r.Allocators)
		if i%2 == 1 {
			slices.Reverse(order[i])
		}
	}
	return order
}

// Turns is the order in which n runs trained side by side (--interleave) take step s: run s mod n
// first, then the others in turn, so that each run goes first as often as any other and every
// step of one run lies next in time to the same step of the others. Rounds of separate runs are
// seconds apart, and on the H200 one allocator's rounds differed by up to 26%; steps taken in
// turn are milliseconds apart.
func Turns(n, s int) []int {
	order := make([]int, n)
	for k := range order {
		order[k] = (s + k) % n
	}
	return order
}

// Run runs every allocator's rounds in the order of Order and gives each allocator's results in
// round order; it stops at the first error.
func Run[R any](r Rounds, run func(round int, allocator string) (R, error)) (map[string][]R, error) {
	byAllocator := make(map[string][]R, len(r.Allocators))
	for round, order := range r.Order() {
		for _, a := range order {
			res, err := run(round, a)
			if err != nil {
				return nil, err
			}
			byAllocator[a] = append(byAllocator[a], res)
		}
	}
	return byAllocator, nil
}

// Timing is an allocator's step times over rounds: the mean of the rounds' mean steady steps, the
// shortest step of any round, and the shortest warm-up of any round. The warm-up is the least, not
// the mean, because the process's first run also pays one-time costs that belong to no allocator
// (loading the CUDA libraries' kernels, cuDNN's and cuBLAS's first calls: on the H200 the first
// ResNet-18 run's warm-up took 2.3 s, the same allocator's in second place 0.16 s).
type Timing struct {
	StepMs, StepMsMin, WarmupMs float64
	RoundStepMs                 []float64 // each round's mean steady step, in round order
}

// Fold folds one allocator's rounds; times gives a round's mean steady step, shortest step and
// warm-up.
func Fold[R any](rounds []R, times func(R) (stepMs, stepMsMin, warmupMs float64)) Timing {
	if len(rounds) == 0 {
		return Timing{}
	}
	var t Timing
	t.StepMsMin, t.WarmupMs = math.Inf(1), math.Inf(1)
	for _, r := range rounds {
		step, least, warm := times(r)
		t.RoundStepMs = append(t.RoundStepMs, step)
		t.StepMs += step / float64(len(rounds))
		t.WarmupMs = min(t.WarmupMs, warm)
		t.StepMsMin = min(t.StepMsMin, least)
	}
	return t
}

// PairedRatio compares two allocators step by step: a and b hold each round's steady step times
// (ms), in round and step order, of runs that trained the same step sequence (the same image size
// or batch at each step), round k of one next to round k of the other. It gives the median, over
// every step of every round both have, of a's time over b's at the same round and step. A drift of
// the GPU's speed between rounds (on the H200 the rounds of one allocator differed by up to 26%,
// results/cnn/H200.md) moves both sides of a pair alike, so the ratio resolves differences that the
// mean step cannot. It reports false when no step pairs up.
func PairedRatio(a, b [][]float64) (float64, bool) {
	var ratios []float64
	for k := range min(len(a), len(b)) {
		for i := range min(len(a[k]), len(b[k])) {
			if b[k][i] > 0 {
				ratios = append(ratios, a[k][i]/b[k][i])
			}
		}
	}
	if len(ratios) == 0 {
		return 0, false
	}
	slices.Sort(ratios)
	n := len(ratios)
	if n%2 == 1 {
		return ratios[n/2], true
	}
	return (ratios[n/2-1] + ratios[n/2]) / 2, true
}

// Mean is the mean of f over the rounds (0 for none): a per-step figure folded like the step time.
func Mean[R any](rounds []R, f func(R) float64) float64 {
	if len(rounds) == 0 {
		return 0
	}
	var sum float64
	for _, r := range rounds {
		sum += f(r)
	}
	return sum / float64(len(rounds))
}
