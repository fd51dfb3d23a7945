package gpudp

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gmlake/gmlake/dataparallel/nccl"
	"github.com/gmlake/gmlake/dataparallel/zero"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/models"
)

// ErrBatch is returned for micro-batches the trainer cannot use.
var ErrBatch = errors.New("gpudp: bad batch")

// ErrStage is returned by New for a ZeRO stage the trainer does not run.
var ErrStage = errors.New("gpudp: unsupported ZeRO stage")

// Options configures a Trainer.
type Options struct {
	Devices   []int           // GPU ordinals, one rank each (rank r on Devices[r])
	AdamW     gpu.AdamWConfig // MaxNorm > 0 clips by the global gradient norm
	LoRA      *models.LoRA    // nil: full fine-tuning
	Recompute bool            // per-block activation recomputation
	Allocator Allocator       // where tensors come from (default GMLake)
	Arena     uint64          // Gorgonia's arena per GPU in bytes (0: 90% of the GPU's free memory)
	// Stage is the ZeRO stage: zero.Stage2 (default; every rank holds all parameters) or
	// zero.Stage3 (every rank holds its shard of each unit, all-gathered per block; see doc.go).
	Stage zero.Stage
}

// Trainer is N data-parallel ranks on N GPUs. Not safe for concurrent use (it runs its ranks
// concurrently itself).
type Trainer struct {
	opts   Options
	w      *models.Weights
	lib    *nccl.Library
	mem    *memorySource
	ranks  []*rank
	layout *zero.Layout // ZeRO-2
	units  *zero.Units  // ZeRO-3
	names  []string
	steps  int
}

// StepStats is what one Step measured.
type StepStats struct {
	Loss float32       // mean of the ranks' losses
	Seq  []int         // each rank's sequence length
	Time time.Duration // wall time of the step, the devices synchronised at its end
}

// New opens the devices and NCCL and prepares to train w (its tensors are only read: every rank
// uploads its own copy).
func New(w *models.Weights, opts Options) (*Trainer, error) {
	if len(opts.Devices) == 0 {
		return nil, fmt.Errorf("gpudp: no devices")
	}
	switch opts.Stage {
	case 0:
		opts.Stage = zero.Stage2
	case zero.Stage2, zero.Stage3:
	default:
		return nil, fmt.Errorf("%w: %v (have %v and %v)", ErrStage, opts.Stage, zero.Stage2, zero.Stage3)
	}
	t := &Trainer{opts: opts, w: w}
	if err := t.open(); err != nil {
		return nil, errors.Join(err, t.Close())
	}
	return t, nil
}

// open loads NCCL, makes the pools, the devices and the communicators.
func (t *Trainer) open() (err error) {
	opts := t.opts
	if t.lib, err = nccl.Open(); err != nil {
		return err
	}
	if t.mem, err = newMemorySource(opts.Allocator, opts.Devices, opts.Arena); err != nil {
		return err
	}
	for r, ordinal := range opts.Devices {
		alloc, err := t.mem.deviceOption(r)
		if err != nil {
			return err
		}
		dev, err := gpu.New(append(alloc, gpu.WithDevice(ordinal))...)
		if err != nil {
			return fmt.Errorf("gpudp: rank %d (GPU %d): %w", r, ordinal, err)
		}
		t.ranks = append(t.ranks, &rank{index: r, dev: dev, graphs: map[shapeKey]*shapeGraph{}, frozen: map[any]*gpu.Tensor{}})
	}
	comms, err := t.lib.InitAll(opts.Devices)
	if err != nil {
		return err
	}
	for r, c := range comms {
		t.ranks[r].comm = c
	}
	return nil
}

// Ranks is the number of ranks.
func (t *Trainer) Ranks() int { return len(t.ranks) }

// Names are the trained parameters in layout order (known after the first Step).
func (t *Trainer) Names() []string { return t.names }

// Stage is the ZeRO stage the trainer runs.
func (t *Trainer) Stage() zero.Stage { return t.opts.Stage }

// Layout is the flat layout of the trained parameters at ZeRO-2 (nil before the first Step and
// at ZeRO-3).
func (t *Trainer) Layout() *zero.Layout { return t.layout }

// Units is the per-unit layout of the trained parameters at ZeRO-3 (nil before the first Step
// and at ZeRO-2).
func (t *Trainer) Units() *zero.Units { return t.units }

// Gathers is the number of unit all-gathers rank 0 has issued so far (ZeRO-3: two per unit and
// step; 0 at ZeRO-2).
func (t *Trainer) Gathers() int {
	if len(t.ranks) == 0 || t.ranks[0].sharded == nil {
		return 0
	}
	return t.ranks[0].sharded.gathers
}

// Step trains on one micro-batch per rank: ids[r] holds rank r's sequences, all of one length
// within the rank (ranks may differ).
func (t *Trainer) Step(ids [][][]int) (StepStats, error) {
	if len(ids) != len(t.ranks) {
		return StepStats{}, fmt.Errorf("%w: %d micro-batches for %d ranks", ErrBatch, len(ids), len(t.ranks))
	}
	start := time.Now()
	st := StepStats{Seq: make([]int, len(t.ranks))}
	// Graphs are looked up (or built: models.Build shares the Weights) one rank after another; the
	// ranks then run forward and backward concurrently, each goroutine driving its own Device.
	for r, rk := range t.ranks {
		rk.dev.MarkIteration()
		sg, err := t.graph(rk, ids[r])
		if err != nil {
			return st, err
		}
		st.Seq[r] = sg.g.Seq
		if err := sg.g.SetIDs(flatten(ids[r])); err != nil {
			return st, err
		}
	}
	errs := make([]error, len(t.ranks))
	var wg sync.WaitGroup
	for r, rk := range t.ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rk.current.m.Run(); err != nil {
				errs[r] = fmt.Errorf("gpudp: rank %d: %w", r, err)
				return
			}
			collect := rk.collectGrads
			if rk.sharded != nil {
				collect = rk.sharded.reduceGrads
			}
			if err := collect(rk.current); err != nil {
				errs[r] = fmt.Errorf("gpudp: rank %d: %w", r, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return st, err
	}
	if err := t.reduceAndUpdate(); err != nil {
		return st, err
	}
	for r, rk := range t.ranks {
		loss, err := rk.current.m.Value(rk.current.g.Loss) // waits for the rank's stream
		if err != nil {
			return st, fmt.Errorf("gpudp: rank %d: %w", r, err)
		}
		st.Loss += loss[0] / float32(len(t.ranks))
		if err := rk.dev.Synchronize(); err != nil {
			return st, fmt.Errorf("gpudp: rank %d: %w", r, err)
		}
		// The gradients are in flatGrad and spent: a graph kept for a length that may not come
		// back holds no device memory (one per length seen held a full set of gradients each).
		if err := rk.current.m.Release(); err != nil {
			return st, fmt.Errorf("gpudp: rank %d: %w", r, err)
		}
	}
	st.Time = time.Since(start)
	return st, nil
}

// reduceAndUpdate is the optimizer step over NCCL. ZeRO-2: reduce-scatter of the flat gradient,
// global norm, AdamW on the shards, all-gather of the parameters. ZeRO-3: the ranks reduced their
// gradients unit by unit already (sharded.reduceGrads) and the parameters stay sharded, so only
// the norm and AdamW remain.
func (t *Trainer) reduceAndUpdate() error {
	if t.opts.Stage == zero.Stage3 {
		return t.update()
	}
	shard := t.layout.ShardLen
	err := t.lib.Group(func() error {
		for _, rk := range t.ranks {
			if err := rk.comm.ReduceScatter(rk.flatGrad.Ptr(), rk.gradShard.Ptr(), shard, nccl.Float32, nccl.Sum,
				uintptr(rk.dev.Stream())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := t.update(); err != nil {
		return err
	}
	return t.lib.Group(func() error {
		for _, rk := range t.ranks {
			if err := rk.comm.AllGather(rk.paramShard.Ptr(), rk.flatParam.Ptr(), shard, nccl.Float32,
				uintptr(rk.dev.Stream())); err != nil {
				return err
			}
		}
		return nil
	})
}

// update scales every rank's reduced gradient shard to the mean, all-reduces the squared norm and
// runs AdamW on the rank's parameter shard.
func (t *Trainer) update() error {
	n := len(t.ranks)
	for _, rk := range t.ranks {
		if n > 1 {
			if err := rk.dev.Scale(rk.gradShard, rk.gradShard, 1/float32(n)); err != nil {
				return err
			}
		}
		if err := rk.dev.Zero(rk.normsq); err != nil {
			return err
		}
		if err := rk.dev.SumSquares(rk.normsq, rk.gradShard); err != nil {
			return err
		}
	}
	err := t.lib.Group(func() error {
		for _, rk := range t.ranks {
			if err := rk.comm.AllReduce(rk.normsq.Ptr(), rk.normsq.Ptr(), 1, nccl.Float32, nccl.Sum,
				uintptr(rk.dev.Stream())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.steps++
	for _, rk := range t.ranks {
		normsq := rk.normsq
		if t.opts.AdamW.MaxNorm <= 0 {
			normsq = nil
		}
		if err := rk.dev.AdamW(rk.paramShard, rk.gradShard, rk.m, rk.v, normsq, t.opts.AdamW, t.steps); err != nil {
			return err
		}
	}
	return nil
}

// Params downloads rank r's trained parameters, one slice per name of Names. At ZeRO-3 no rank
// holds them all: they are assembled from every rank's shards (the same for every r).
func (t *Trainer) Params(r int) ([][]float32, error) {
	if t.names == nil {
		return nil, fmt.Errorf("gpudp: no step taken yet")
	}
	if t.units != nil {
		return t.assemble()
	}
	flat, err := t.ranks[r].flatParam.ToHost()
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(t.layout.Params))
	for i, s := range t.layout.Params {
		out[i] = make([]float32, s.Len)
	}
	return out, t.layout.Unflatten(out, flat)
}

// MemoryStats are each rank's device tensor statistics (gpu.Device's view).
func (t *Trainer) MemoryStats() []gpu.MemoryStats {
	out := make([]gpu.MemoryStats, len(t.ranks))
	for i, rk := range t.ranks {
		out[i] = rk.dev.MemoryStats()
	}
	return out
}

// Memory is what each rank's allocator held so far.
func (t *Trainer) Memory() []RankMemory {
	out := make([]RankMemory, len(t.ranks))
	for r, rk := range t.ranks {
		active := rk.dev.MemoryStats().PeakLiveBytes
		reserved, calls := t.mem.reserved(r, active)
		out[r] = RankMemory{PeakActive: active, PeakReserved: reserved, DriverCalls: calls}
		if reserved > 0 {
			out[r].Fragmentation = 1 - float64(active)/float64(reserved)
		}
	}
	return out
}

// Check checks every rank's allocator's invariants (gmlake's engines; nothing for the others).
func (t *Trainer) Check() error { return t.mem.check() }

// Close frees every rank's tensors, machines, communicator and device, then the pools.
func (t *Trainer) Close() error {
	var errs []error
	for _, rk := range t.ranks {
		errs = append(errs, rk.close())
	}
	t.ranks = nil
	if t.mem != nil {
		errs = append(errs, t.mem.close())
		t.mem = nil
	}
	return errors.Join(errs...)
}

func flatten(rows [][]int) []int {
	var out []int
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// assemble downloads every rank's parameter shard and puts the parameters together (ZeRO-3).
func (t *Trainer) assemble() ([][]float32, error) {
	shards := make([][]float32, len(t.ranks))
	for q, rk := range t.ranks {
		var err error
		if shards[q], err = rk.paramShard.ToHost(); err != nil {
			return nil, err
		}
	}
	out := make([][]float32, len(t.units.UnitOf))
	for k, members := range t.units.Members {
		for j, i := range members {
			out[i] = make([]float32, t.units.Layouts[k].Params[j].Len)
		}
	}
	return out, t.units.Assemble(out, shards)
}
