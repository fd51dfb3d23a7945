package shardsim

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/dataparallel/zero"
	"github.com/gmlake/gmlake/models"
)

// ErrWorkload is wrapped by every error about a bad Workload.
var ErrWorkload = errors.New("shardsim: bad workload")

// Stage3 partitions the parameters as well (ZeRO-3 / FSDP): each segment's parameters are
// all-gathered into a staging buffer before its forward and again before its backward.
const Stage3 = zero.Stage3

// Workload is one rank's view of a data-parallel ZeRO fine-tuning job.
type Workload struct {
	Preset string        // models.Preset name, e.g. "opt-1.3b"
	Model  models.Config // filled from Preset by Normalize when zero
	LoRA   bool          // adapters on the attention projections, base frozen; else full fine-tuning
	Rank   int           // LoRA rank (default 16)
	Stage  zero.Stage    // 1, 2 or 3 (default 2)
	Ranks  int           // data-parallel world size N
	Me     int           // this rank, 0 ≤ Me < Ranks

	MicroBatch     int  // sequences per rank per step (default 4)
	SeqMin, SeqMax int  // each step draws its padded length uniformly from [SeqMin, SeqMax] (multiples of 8)
	Recompute      bool // activation recomputation per transformer block
	// OverlapComm allocates communication buffers (stage-3 gathers, reduce-scatter staging) on a
	// stream of their own, as DeepSpeed's overlap_comm does, instead of the compute stream.
	OverlapComm bool
	Steps       int // training steps (default 6)
	Seed        uint64

	// BucketElems is the gradient reduction bucket (DeepSpeed's reduce_bucket_size, in elements;
	// default 5e8, DeepSpeed's default), capped at the trainable elements.
	BucketElems int64
	// Align is the shard alignment in elements (default zero.DefaultAlign).
	Align int
}

// Normalize fills defaults and checks the workload.
func (w Workload) Normalize() (Workload, error) {
	if w.Model.Arch == "" {
		cfg, err := models.Preset(w.Preset)
		if err != nil {
			return w, fmt.Errorf("%w: %w", ErrWorkload, err)
		}
		w.Model = cfg
	}
	if err := w.Model.Validate(); err != nil {
		return w, fmt.Errorf("%w: %w", ErrWorkload, err)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&w.Rank, 16)
	def(&w.MicroBatch, 4)
	def(&w.Steps, 6)
	def(&w.Align, zero.DefaultAlign)
	def(&w.SeqMin, 256)
	def(&w.SeqMax, 1024)
	if w.Stage == 0 {
		w.Stage = zero.Stage2
	}
	if w.BucketElems == 0 {
		w.BucketElems = 500_000_000
	}
	w.SeqMax = min(w.SeqMax, w.Model.MaxPositions)
	switch {
	case w.Stage < zero.Stage1 || w.Stage > Stage3:
		return w, fmt.Errorf("%w: stage %d (have 1, 2, 3)", ErrWorkload, int(w.Stage))
	case w.Ranks < 1 || w.Me < 0 || w.Me >= w.Ranks:
		return w, fmt.Errorf("%w: rank %d of %d", ErrWorkload, w.Me, w.Ranks)
	case w.SeqMin < 8 || w.SeqMin > w.SeqMax:
		return w, fmt.Errorf("%w: sequence lengths [%d, %d] (max positions %d)", ErrWorkload, w.SeqMin, w.SeqMax, w.Model.MaxPositions)
	case w.MicroBatch < 1 || w.Steps < 1 || w.Rank < 1 || w.BucketElems < 1:
		return w, fmt.Errorf("%w: micro-batch %d, steps %d, LoRA rank %d, bucket %d must be positive",
			ErrWorkload, w.MicroBatch, w.Steps, w.Rank, w.BucketElems)
	}
	return w, nil
}

// Name labels the workload in reports, e.g. "opt-1.3b-full-z2-ckpt".
func (w Workload) Name() string {
	mode := "full"
	if w.LoRA {
		mode = "lora"
	}
	name := fmt.Sprintf("%s-%s-z%d", w.Preset, mode, int(w.Stage))
	if w.Recompute {
		name += "-ckpt"
	}
	if w.OverlapComm {
		name += "-overlap"
	}
	return name
}

// commStream is the stream communication buffers are allocated on.
func (w Workload) commStream() uint64 {
	if w.OverlapComm {
		return commStream
	}
	return computeStream
}
