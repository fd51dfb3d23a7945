package graphexec

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/models"
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// BenchmarkTrainerStep fine-tunes a randomly initialised preset on the GPU (whatever allocator
// the Device has: here cuMemAlloc per tensor, the "direct" baseline) and reports the steady-state
// step time, the first (warm-up) step's time, the peak of live bytes and the allocations per step.
// GMLAKE_BENCH_PRESET (default gpt2-tiny), GMLAKE_BENCH_BATCH, GMLAKE_BENCH_SEQ and
// GMLAKE_BENCH_LORA (comma-separated targets; empty: full fine-tuning) choose the run.
func BenchmarkTrainerStep(b *testing.B) {
	n, err := gpu.DeviceCount()
	if err != nil || n == 0 {
		b.Skipf("no GPU: %v", err)
	}
	preset := envOr("GMLAKE_BENCH_PRESET", "gpt2-tiny")
	batch, err := strconv.Atoi(envOr("GMLAKE_BENCH_BATCH", "2"))
	require.NoError(b, err)
	seq, err := strconv.Atoi(envOr("GMLAKE_BENCH_SEQ", "64"))
	require.NoError(b, err)
	cfg, err := models.Preset(preset)
	require.NoError(b, err)
	var lora *models.LoRA
	if t := os.Getenv("GMLAKE_BENCH_LORA"); t != "" {
		lora = &models.LoRA{Rank: 16, Alpha: 32, Targets: strings.Split(t, ","), Seed: 1}
	}
	w, err := models.InitWeights(cfg, 1, nil)
	require.NoError(b, err)
	g, err := models.Build(w, models.BuildOptions{Batch: batch, Seq: seq, LoRA: lora})
	require.NoError(b, err)

	d, err := gpu.New()
	require.NoError(b, err)
	defer d.Close()
	tr, err := NewTrainer(d, g, gpu.AdamWConfig{LR: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MaxNorm: 1})
	require.NoError(b, err)
	defer tr.Close()
	ids := make([]int, batch*seq)
	for i := range ids {
		ids[i] = (i*7919 + 13) % cfg.Vocab
	}
	resident := d.MemoryStats().LiveBytes
	d.ResetPeak()
	start := time.Now()
	loss, err := tr.Step(ids)
	require.NoError(b, err)
	warm := time.Since(start)
	before := d.MemoryStats()

	b.ResetTimer()
	for range b.N {
		if loss, err = tr.Step(ids); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after := d.MemoryStats()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/step")
	b.ReportMetric(float64(warm.Milliseconds()), "warmup_ms")
	b.ReportMetric(float64(after.PeakLiveBytes)/(1<<30), "peak_live_GiB")
	b.ReportMetric(float64(resident)/(1<<30), "resident_GiB")
	b.ReportMetric(float64(after.Allocs-before.Allocs)/float64(b.N), "allocs/step")
	b.Logf("%s batch %d seq %d lora %v on %s: loss %.4f, %d graph nodes", preset, batch, seq, lora != nil, d.Name(),
		loss, len(g.G.AllNodes()))
}
