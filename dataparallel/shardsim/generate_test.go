package shardsim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/dataparallel/zero"
	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/trace"
)

// small is a workload cheap enough for unit tests, with every mechanism on.
func small(stage zero.Stage, lora, ckpt bool, ranks, me int) Workload {
	return Workload{Preset: "gpt2-small", LoRA: lora, Stage: stage, Ranks: ranks, Me: me, Recompute: ckpt,
		MicroBatch: 2, SeqMin: 64, SeqMax: 256, Steps: 3, Seed: 3, BucketElems: 20_000_000}
}

// liveAtEnd sums the sizes of allocations never freed.
func liveAtEnd(t *trace.Trace) int64 {
	live := make(map[int64]uint64)
	for _, ev := range t.Events {
		switch ev.Kind {
		case trace.Alloc:
			live[ev.ID] = ev.Size
		case trace.Free:
			delete(live, ev.ID)
		}
	}
	var n int64
	for _, s := range live {
		n += int64(s)
	}
	return n
}

func TestFullFineTuningTrainsEveryParameter(t *testing.T) {
	for _, name := range models.PresetNames() {
		cfg, err := models.Preset(name)
		require.NoError(t, err)
		m := newModel(cfg, false, 16)
		var total int64
		for _, s := range m.trainableSizes() {
			total += int64(s)
		}
		assert.Equal(t, cfg.ParamCount(), total, name)
		assert.Zero(t, m.frozenElems(), name)
	}
}

func TestLoRATrainsOnlyAdapters(t *testing.T) {
	tests := []struct {
		preset string
		perLay func(c models.Config, r int64) int64
	}{
		{"gpt2-small", func(c models.Config, r int64) int64 { return int64(c.Hidden)*r + r*3*int64(c.Hidden) }},
		{"llama-7b", func(c models.Config, r int64) int64 {
			h, q, kv := int64(c.Hidden), int64(c.Heads*c.HeadSize()), int64(c.KVHeads*c.HeadSize())
			return (h*r + r*q) + (h*r + r*kv)
		}},
	}
	for _, tt := range tests {
		cfg, err := models.Preset(tt.preset)
		require.NoError(t, err)
		m := newModel(cfg, true, 16)
		var total int64
		for _, s := range m.trainableSizes() {
			total += int64(s)
		}
		assert.Equal(t, int64(cfg.Layers)*tt.perLay(cfg, 16), total, tt.preset)
		assert.Equal(t, cfg.ParamCount(), m.frozenElems(), "%s: the base is frozen whole", tt.preset)
	}
}

// TestTracesBalance: every combination gives a valid trace whose only survivors are the state
// kept for the whole run, and whose reduce-scatters deliver exactly the rank's shard each step.
func TestTracesBalance(t *testing.T) {
	for _, stage := range []zero.Stage{zero.Stage1, zero.Stage2, Stage3} {
		for _, lora := range []bool{false, true} {
			for _, ckpt := range []bool{false, true} {
				for _, ranks := range []int{1, 3} {
					me := ranks - 1
					w := small(stage, lora, ckpt, ranks, me)
					t.Run(fmt.Sprintf("%s/N%d", w.Name(), ranks), func(t *testing.T) {
						tr, br, err := Generate(w)
						require.NoError(t, err)
						require.NoError(t, tr.Validate())
						assert.Len(t, tr.Iterations(), w.Steps)
						assert.Len(t, br.SeqLens, w.Steps)
						assert.Equal(t, br.Params+br.FrozenParams+br.Master+br.Optimizer, liveAtEnd(tr))
						if stage == zero.Stage1 {
							assert.Zero(t, br.Received)
							return
						}
						w, _ = w.Normalize()
						m := newModel(w.Model, w.LoRA, w.Rank)
						layout, err := zero.NewLayout(m.trainableSizes(), ranks, 0)
						require.NoError(t, err)
						var owned int64
						for _, p := range layout.Pieces(me) {
							owned += int64(p.Len)
						}
						assert.Equal(t, int64(w.Steps)*owned*half, br.Received)
					})
				}
			}
		}
	}
}

func TestShardsShrinkAsRanksGrow(t *testing.T) {
	for _, stage := range []zero.Stage{zero.Stage1, zero.Stage2, Stage3} {
		var prev Breakdown
		for i, n := range []int{1, 2, 4, 8} {
			_, br, err := Generate(small(stage, false, true, n, 0))
			require.NoError(t, err)
			if i > 0 {
				assert.Less(t, br.Optimizer, prev.Optimizer, "stage %d N=%d", stage, n)
				assert.Less(t, br.Master, prev.Master, "stage %d N=%d", stage, n)
				assert.Less(t, br.PeakActive, prev.PeakActive, "stage %d N=%d", stage, n)
				if stage == Stage3 {
					assert.Less(t, br.Params, prev.Params, "stage 3 shards parameters")
				} else {
					assert.InDelta(t, prev.Params, br.Params, float64(n*zero.DefaultAlign*half),
						"stages 1 and 2 replicate parameters (the padding grows with N)")
				}
			}
			assert.Equal(t, prev.SeqLens == nil || equal(prev.SeqLens, br.SeqLens), true, "rank 0 draws the same lengths at every N")
			prev = br
		}
	}
}

func equal(a, b []int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestRecomputationLowersThePeak: where activations dominate (long sequences, sharded state),
// keeping only block inputs must lower the peak. Not by more than the head's share: the logits
// (bf16, then fp32 upcast and log-softmax over a 50k vocabulary) are not recomputed.
func TestRecomputationLowersThePeak(t *testing.T) {
	long := func(ckpt bool) Workload {
		w := small(Stage3, false, ckpt, 8, 0)
		w.MicroBatch, w.SeqMin, w.SeqMax = 8, 512, 1024
		return w
	}
	_, plain, err := Generate(long(false))
	require.NoError(t, err)
	_, ckpt, err := Generate(long(true))
	require.NoError(t, err)
	assert.Less(t, float64(ckpt.PeakActive), 0.8*float64(plain.PeakActive))
}

func TestGenerateIsDeterministicPerRank(t *testing.T) {
	a, _, err := Generate(small(zero.Stage2, false, true, 4, 1))
	require.NoError(t, err)
	b, _, err := Generate(small(zero.Stage2, false, true, 4, 1))
	require.NoError(t, err)
	assert.Equal(t, a.Events, b.Events)
	_, br1, err := Generate(small(zero.Stage2, false, true, 4, 1))
	require.NoError(t, err)
	_, br2, err := Generate(small(zero.Stage2, false, true, 4, 2))
	require.NoError(t, err)
	assert.NotEqual(t, br1.SeqLens, br2.SeqLens, "ranks draw their own lengths")
	for _, s := range br1.SeqLens {
		assert.Zero(t, s%8)
		assert.GreaterOrEqual(t, s, 64)
		assert.LessOrEqual(t, s, 256)
	}
}

func TestBadWorkloads(t *testing.T) {
	tests := []struct {
		name string
		w    Workload
	}{
		{"unknown preset", Workload{Preset: "gpt-5", Ranks: 1}},
		{"stage 4", Workload{Preset: "gpt2-tiny", Stage: 4, Ranks: 1}},
		{"rank outside world", Workload{Preset: "gpt2-tiny", Ranks: 2, Me: 2}},
		{"no ranks", Workload{Preset: "gpt2-tiny"}},
		{"lengths reversed", Workload{Preset: "gpt2-tiny", Ranks: 1, SeqMin: 100, SeqMax: 64}},
	}
	for _, tt := range tests {
		_, _, err := Generate(tt.w)
		assert.ErrorIs(t, err, ErrWorkload, tt.name)
	}
}

func TestParseWorkload(t *testing.T) {
	tests := []struct {
		in   string
		want Workload
		ok   bool
	}{
		{"opt-1.3b:full:2:ckpt", Workload{Preset: "opt-1.3b", Stage: 2, Recompute: true}, true},
		{"llama-7b:lora:3", Workload{Preset: "llama-7b", LoRA: true, Stage: 3}, true},
		{"llama-7b:lora", Workload{}, false},
		{"llama-7b:qlora:2", Workload{}, false},
		{"llama-7b:full:two", Workload{}, false},
		{"llama-7b:full:2:offload", Workload{}, false},
		{"llama-7b:full:3:ckpt:overlap", Workload{Preset: "llama-7b", Stage: 3, Recompute: true, OverlapComm: true}, true},
		{"llama-7b:full:3:overlap", Workload{Preset: "llama-7b", Stage: 3, OverlapComm: true}, true},
		{"llama-7b:full:3:ckpt:ckpt", Workload{}, false},
	}
	for _, tt := range tests {
		got, err := ParseWorkload(tt.in)
		if !tt.ok {
			assert.ErrorIs(t, err, ErrWorkload, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	w, err := ParseWorkload("opt-1.3b:full:2:ckpt")
	require.NoError(t, err)
	assert.Equal(t, "opt-1.3b-full-z2-ckpt", w.Name())
}

// TestOverlapPutsCommunicationOnItsOwnStream: with OverlapComm the stage-3 gathers and the
// reduce-scatter staging are the only allocations on the communication stream; without, every
// allocation is on the compute stream.
func TestOverlapPutsCommunicationOnItsOwnStream(t *testing.T) {
	count := func(w Workload) (comm, compute int) {
		tr, _, err := Generate(w)
		require.NoError(t, err)
		require.NoError(t, tr.Validate())
		for _, ev := range tr.Events {
			if ev.Kind != trace.Alloc {
				continue
			}
			if ev.Stream == commStream {
				comm++
			} else {
				compute++
			}
		}
		return comm, compute
	}
	w := small(Stage3, false, true, 4, 1)
	comm, compute := count(w)
	assert.Zero(t, comm)
	w.OverlapComm = true
	comm2, compute2 := count(w)
	assert.Positive(t, comm2)
	assert.Equal(t, comm+compute, comm2+compute2, "the same allocations, on other streams")
	assert.Equal(t, "gpt2-small-full-z3-ckpt-overlap", w.Name())
}
