package shardsim

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/dataparallel/zero"
	"github.com/gmlake/gmlake/trace"
)

// ParseWorkload reads "PRESET:MODE:STAGE[:ckpt][:overlap]", e.g. "opt-1.3b:full:2:ckpt" or
// "llama-7b:lora:3:overlap"; other fields keep their zero values (defaults after Normalize).
func ParseWorkload(s string) (Workload, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 3 || len(parts) > 5 {
		return Workload{}, fmt.Errorf("%w: %q: want PRESET:full|lora:STAGE[:ckpt][:overlap]", ErrWorkload, s)
	}
	w := Workload{Preset: parts[0]}
	switch parts[1] {
	case "full":
	case "lora":
		w.LoRA = true
	default:
		return Workload{}, fmt.Errorf("%w: %q: mode %q (want full or lora)", ErrWorkload, s, parts[1])
	}
	stage, err := strconv.Atoi(parts[2])
	if err != nil {
		return Workload{}, fmt.Errorf("%w: %q: stage %q", ErrWorkload, s, parts[2])
	}
	w.Stage = zero.Stage(stage)
	for _, flag := range parts[3:] {
		switch {
		case flag == "ckpt" && !w.Recompute:
			w.Recompute = true
		case flag == "overlap" && !w.OverlapComm:
			w.OverlapComm = true
		default:
			return Workload{}, fmt.Errorf("%w: %q: %q (want ckpt or overlap, once each)", ErrWorkload, s, flag)
		}
	}
	return w, nil
}

// Study runs workloads at several world sizes through several allocators.
type Study struct {
	Workloads  []Workload // Ranks and Me are set per run
	WorldSizes []int
	Allocators []bench.Spec
	MaxRanks   int    // measure at most this many ranks per world size (spread evenly, first and last included); 0 = all
	Workers    int    // parallel replays (default 1)
	MaxProbes  int    // halving replays per minimum-capacity bisection (bench.MeasureOptions.MaxProbes); 0 = to the step
	TraceDir   string // when set, every generated trace is also written there (see TraceFile)
	Logger     *slog.Logger
}

// Row is one (workload, world size, allocator): per-rank figures, worst rank.
type Row struct {
	Workload  string `json:"workload"`
	Ranks     int    `json:"ranks"`
	Allocator string `json:"allocator"`
	Measured  []int  `json:"measured_ranks"`

	PeakActive         uint64  `json:"peak_active"`          // largest per-rank peak of requested bytes
	PeakReserved       uint64  `json:"peak_reserved"`        // largest per-rank peak reserved
	Fragmentation      float64 `json:"fragmentation"`        // largest per-rank 1 - active/reserved
	MinCapacity        uint64  `json:"min_capacity"`         // largest per-rank smallest device that fits
	CapacityOverActive float64 `json:"capacity_over_active"` // largest per-rank min capacity / peak active
	Exact              bool    `json:"min_capacity_exact"`   // every bisection reached the step (within MaxProbes)
	SteadyDriverCalls  float64 `json:"steady_driver_calls_per_iter"`

	Breakdown Breakdown `json:"breakdown"` // rank 0's persistent state
	Events    int       `json:"events"`    // events of rank 0's trace
}

// ranksToMeasure picks up to max ranks of n, evenly spread, first and last included.
func ranksToMeasure(n, most int) []int {
	if most <= 0 || most >= n {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	if most == 1 {
		return []int{0}
	}
	seen := make(map[int]bool)
	var out []int
	for i := range most {
		r := i * (n - 1) / (most - 1)
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

type job struct {
	row  int // index into rows
	p    *bench.Prepared
	spec bench.Spec
	rank int
}

// Run generates every rank's trace, replays it through every allocator (uncapped, then bisecting
// the minimum capacity) and folds the ranks of each (workload, world size, allocator) into a Row.
// Rows come in the order workloads × world sizes × allocators.
func (s Study) Run() ([]Row, error) {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rows []Row
	var jobs []job
	for _, base := range s.Workloads {
		for _, n := range s.WorldSizes {
			first := len(rows)
			for _, spec := range s.Allocators {
				rows = append(rows, Row{Workload: base.Name(), Ranks: n, Allocator: spec.Name, Exact: true})
			}
			for _, me := range ranksToMeasure(n, s.MaxRanks) {
				w := base
				w.Ranks, w.Me = n, me
				t, br, err := Generate(w)
				if err != nil {
					return nil, err
				}
				if s.TraceDir != "" {
					path := filepath.Join(s.TraceDir, TraceFile(w))
					if err := trace.WriteFile(path, t); err != nil {
						return nil, fmt.Errorf("shardsim: writing %s: %w", path, err)
					}
				}
				p, err := bench.Prepare(fmt.Sprintf("%s/N%d/rank%d", w.Name(), n, me), t)
				if err != nil {
					return nil, err
				}
				for i, spec := range s.Allocators {
					row := &rows[first+i]
					row.Measured = append(row.Measured, me)
					if me == 0 {
						row.Breakdown, row.Events = br, len(t.Events)
					}
					jobs = append(jobs, job{row: first + i, p: p, spec: spec, rank: me})
				}
			}
		}
	}
	reports, err := s.measure(jobs, log)
	if err != nil {
		return nil, err
	}
	for i, j := range jobs {
		fold(&rows[j.row], reports[i])
	}
	return rows, nil
}

func (s Study) measure(jobs []job, log *slog.Logger) ([]bench.Report, error) {
	workers := max(1, s.Workers)
	reports := make([]bench.Report, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				start := time.Now()
				reports[i], errs[i] = bench.Measure(j.p, j.spec, bench.MeasureOptions{MinCapacity: true, MaxProbes: s.MaxProbes})
				log.Info("shardsim: measured", "trace", j.p.Name, "allocator", j.spec.Name, "took", time.Since(start).Round(time.Millisecond))
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("shardsim: %s through %s: %w", jobs[i].p.Name, jobs[i].spec.Name, err)
		}
	}
	return reports, nil
}

// fold takes one rank's report into its row: every figure is the worst over ranks.
func fold(row *Row, rep bench.Report) {
	row.PeakActive = max(row.PeakActive, rep.PeakActive)
	row.PeakReserved = max(row.PeakReserved, rep.PeakReserved)
	row.Fragmentation = max(row.Fragmentation, rep.Fragmentation)
	if rep.MinCapacity != nil {
		row.MinCapacity = max(row.MinCapacity, *rep.MinCapacity)
	}
	if rep.CapacityOverActive != nil {
		row.CapacityOverActive = max(row.CapacityOverActive, *rep.CapacityOverActive)
	}
	if rep.MinCapacityExact != nil && !*rep.MinCapacityExact {
		row.Exact = false
	}
	if rep.SteadyDriverCallsPerIter != nil {
		row.SteadyDriverCalls = max(row.SteadyDriverCalls, *rep.SteadyDriverCallsPerIter)
	}
}

// TraceFile names the trace of w's rank: "<workload>-N<ranks>-rank<me>.trace.gz", the text format
// of package trace, gzip'd, as bench/cmd/gmlake-bench and bench/cmd/gpu-replay read it.
func TraceFile(w Workload) string {
	return fmt.Sprintf("%s-N%d-rank%d.trace.gz", w.Name(), w.Ranks, w.Me)
}
