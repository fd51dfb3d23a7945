package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
)

const tinyTrace = `# workload tiny
a 0 12582912 0
i 0
a 1 1000 0
f 1
i 1
a 2 14680064 0
f 2
`

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	var c cli
	parser, err := kong.New(&c, options(&out)...)
	require.NoError(t, err)
	ctx, err := parser.Parse(args)
	require.NoError(t, err)
	err = ctx.Run()
	return out.String(), err
}

func writeTiny(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.trace")
	require.NoError(t, os.WriteFile(path, []byte(tinyTrace), 0o644))
	return path
}

func TestReplayJSON(t *testing.T) {
	out, err := runCLI(t, "replay", "--quiet", "--allocators", "gorgonia,caching,direct", "--min-capacity",
		"--capacity", "20MiB", "--json", writeTiny(t))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	for i, want := range []string{"gorgonia", "caching", "direct"} {
		var row map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &row), lines[i])
		assert.Equal(t, want, row["allocator"])
		assert.Equal(t, "tiny.trace", row["trace"])
		for _, key := range []string{"peak_active", "peak_reserved", "fragmentation", "min_capacity",
			"capacity_over_active", "steady_driver_calls_per_iter", "ns_per_pair", "oom"} {
			assert.Contains(t, row, key, want)
		}
		assert.EqualValues(t, 26<<20, row["peak_active"], want)
	}
	var caching map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &caching))
	assert.Equal(t, true, caching["oom"], "12 + 14 MiB live at once do not fit in 20 MiB")
	assert.EqualValues(t, 26<<20, caching["min_capacity"])
}

func TestReplayTablePlotMarkdown(t *testing.T) {
	dir := t.TempDir()
	anchors := filepath.Join(dir, "anchors.jsonl")
	require.NoError(t, os.WriteFile(anchors, []byte(`{"trace": "tiny.trace", "allocator": "pytorch-default", "peak_active": 27262976, "peak_reserved": 29360128, "fragmentation": 0.07, "min_capacity": 29360128, "capacity_over_active": 1.077}`+"\n"), 0o644))
	md := filepath.Join(dir, "RESULTS.md")
	out, err := runCLI(t, "replay", "--quiet", "--allocators", "caching,direct", "--min-capacity",
		"--plot", filepath.Join(dir, "plots"), "--markdown", md, "--anchors", anchors, writeTiny(t))
	require.NoError(t, err)
	assert.Contains(t, out, "reserved")
	assert.Contains(t, out, "cap/act")
	assert.Contains(t, out, "caching")
	assert.Contains(t, out, "direct")
	png, err := os.ReadFile(filepath.Join(dir, "plots", "tiny.trace.png"))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(png, []byte("\x89PNG")))
	report, err := os.ReadFile(md)
	require.NoError(t, err)
	assert.Contains(t, string(report), "| tiny.trace | pytorch-default |")
	assert.Contains(t, string(report), "| tiny.trace | 0.03 / 0.03 (+0.0%) | 0.03 / 0.03 (-7.1%) |",
		"caching (28 MiB reserved, 26 MiB needed) beside PyTorch default (28 MiB, 28 MiB)")
}

func TestReplayRejectsUnknownAllocator(t *testing.T) {
	_, err := runCLI(t, "replay", "--quiet", "--allocators", "nope", writeTiny(t))
	assert.Error(t, err)
}

// Five iterations: 3 is novel (a larger block), 4 repeats; each iteration allocates and frees.
const steadyTrace = `# workload steady
a 0 1048576 0
i 0
a 1 4194304 0
f 1
i 1
a 2 4194304 0
f 2
i 2
a 3 4194304 0
f 3
i 3
a 4 6291456 0
a 5 1000 0
f 5
f 4
i 4
a 6 4194304 0
f 6
`

func TestReplayNoveltyAndRepeat(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "steady.trace")
	require.NoError(t, os.WriteFile(path, []byte(steadyTrace), 0o644))

	out, err := runCLI(t, "replay", "--quiet", "--allocators", "direct,caching", "--repeat", "3", "--json", path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	var direct, caching map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &direct))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &caching))
	// direct: one call per allocation and per free.
	assert.EqualValues(t, []any{0.0, 3.0}, direct["novel_iterations"])
	assert.EqualValues(t, 2, direct["steady_iters"])
	assert.EqualValues(t, 1, direct["steady_novel_iters"])
	assert.EqualValues(t, 4, direct["steady_novel_calls_per_iter"])
	assert.EqualValues(t, 2, direct["steady_repeat_calls_per_iter"])
	assert.EqualValues(t, 3, direct["repetitions"])
	assert.EqualValues(t, 12.0/5, direct["converged_calls_per_iter"])
	assert.Contains(t, direct, "converged_after")
	assert.Nil(t, direct["converged_after"], "direct never stops calling")
	// caching keeps what it got: from the second repetition on, nothing new.
	assert.EqualValues(t, 0, caching["converged_calls_per_iter"])
	assert.EqualValues(t, 1, caching["converged_after"])

	out, err = runCLI(t, "replay", "--quiet", "--wide", "--allocators", "direct", "--repeat", "2", path)
	require.NoError(t, err)
	assert.Contains(t, out, "steady its forced/novel/all")
	assert.Contains(t, out, "driver ms/it (H200)")
	assert.Contains(t, out, "converged after")
	assert.Contains(t, out, "1 / 1 / 2")
	assert.Contains(t, out, "never (2 reps)")

	md := filepath.Join(dir, "RESULTS.md")
	_, err = runCLI(t, "replay", "--quiet", "--allocators", "direct", "--repeat", "2", "--markdown", md, path)
	require.NoError(t, err)
	report, err := os.ReadFile(md)
	require.NoError(t, err)
	assert.Contains(t, string(report), "--repeat 2")
	assert.Contains(t, string(report), "- **novel** iterations")
	assert.Contains(t, string(report), "- **forced** iterations")
	assert.Contains(t, string(report), "exceeds P_prev / (1 - 0.02)")
	assert.Contains(t, string(report), "- **driver ms/iter (H200 costs)**")
	assert.Contains(t, string(report), "- **converged**")
	assert.Contains(t, string(report), "| steady its forced / novel / all | calls/iter forced / unforced | calls/iter novel / repeat | "+
		"driver ms/iter (H200 costs) | ms/iter novel / repeat | converged calls/iter | converged after | ns/pair |")
	// Iteration 3 is forced (7 MiB live after 5 MiB). At the H200's costs direct spends there
	// 0.231 ms (cuMemAlloc of 6 MiB) + 0.25 ms (1000 bytes) + 2 x 0.6 ms (cuMemFree) = 1.68 ms, and in
	// iteration 4 0.238 ms (4 MiB) + 0.6 ms = 0.84 ms.
	assert.Regexp(t, `\| steady\.trace \| direct \| .* \| 1 / 1 / 2 \| 4\.0 / 2\.0 \| 4\.0 / 2\.0 \| 1\.3 \| 1\.7 / 0\.84 \| 2\.4 \| never \(2 reps\) \| \d+ \|`, string(report))
	assert.Contains(t, string(report), "| steady.trace | 1 / 1 / 2 | 1.3 (1.7 / 0.84) |")

	_, err = runCLI(t, "replay", "--quiet", "--repeat=-1", path)
	assert.Error(t, err)
}

func TestBindingCause(t *testing.T) {
	msg := "stitch: out of memory: asked 688319872 bytes (688320000 rounded); 182003712 bytes free in 288 pieces, " +
		"largest 3575808, stitching reaches 3796992; 10563354624 of 11181323061 bytes reserved: stitch: more: out of memory"
	assert.Equal(t, "173.57 MiB in 288 pieces (largest 3.41 MiB); a stitch reaches 3.62 MiB", bindingCause(msg))
	assert.Equal(t, "direct: cuMemAlloc refused", bindingCause("direct: cuMemAlloc refused"), "another form: as it is")
}

// TestReplayGrowthSlack: --growth-slack adds a gmlake/slack=F row per fraction beside gmlake's, and
// refuses a list of allocators without gmlake or a fraction outside [0, 1).
func TestReplayGrowthSlack(t *testing.T) {
	out, err := runCLI(t, "replay", "--quiet", "--allocators", "gmlake,gorgonia", "--growth-slack", "0.005,0.5",
		"--json", writeTiny(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"gmlake", "gorgonia", "gmlake/slack=0.005", "gmlake/slack=0.5"}, allocatorNames(t, out))

	_, err = runCLI(t, "replay", "--quiet", "--allocators", "caching", "--growth-slack", "0.01", writeTiny(t))
	require.ErrorIs(t, err, errVariantWithoutGMLake)
	_, err = runCLI(t, "replay", "--quiet", "--allocators", "gmlake", "--growth-slack", "1.5", writeTiny(t))
	require.ErrorIs(t, err, stitch.ErrBadOption)
}

// TestReplayWarmupGrowth: --warmup-growth adds a gmlake/warmup=NMiB row per size beside gmlake's,
// and refuses a list of allocators without gmlake.
func TestReplayWarmupGrowth(t *testing.T) {
	out, err := runCLI(t, "replay", "--quiet", "--allocators", "gmlake", "--warmup-growth", "64MiB,128MiB",
		"--json", writeTiny(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"gmlake", "gmlake/warmup=64MiB", "gmlake/warmup=128MiB"}, allocatorNames(t, out))

	_, err = runCLI(t, "replay", "--quiet", "--allocators", "caching", "--warmup-growth", "64MiB", writeTiny(t))
	require.ErrorIs(t, err, errVariantWithoutGMLake)
}

// allocatorNames returns the allocator of each JSON line of out, in order.
func allocatorNames(t *testing.T, out string) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &row), line)
		names = append(names, row["allocator"].(string))
	}
	return names
}

// The targets table judges each gmlake variant against the trace's step, the pool's ns/pair and
// PyTorch expandable's capacity; a trace without a step has no driver-time target.
func TestWriteTargets(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	reports := map[string][]bench.Report{
		"a.trace.gz": {
			{Trace: "a.trace.gz", Allocator: "gmlake", PeakActive: 100 * units.MiB, SteadyDriverMsMax: f(0.5),
				WarmupDriverMsMax: f(20), CapacityOverActive: f(1.004), SteadyNsPerPair: f(1200),
				Convergence: &bench.Convergence{Repetitions: 4}},
			{Trace: "a.trace.gz", Allocator: "gorgonia", PeakActive: 100 * units.MiB, SteadyNsPerPair: f(1000)},
		},
		"b.trace.gz": {
			{Trace: "b.trace.gz", Allocator: "gmlake", PeakActive: 100 * units.MiB, SteadyDriverMsMax: f(3),
				WarmupDriverMsMax: f(5), CapacityOverActive: f(1.009), SteadyNsPerPair: f(2000),
				Convergence: &bench.Convergence{Repetitions: 4, ConvergedCallsPerIter: 2}},
			{Trace: "b.trace.gz", Allocator: "gorgonia", PeakActive: 100 * units.MiB, SteadyNsPerPair: f(1000)},
		},
	}
	anchors := []bench.Anchor{{Trace: "b.trace.gz", Allocator: "pytorch-expandable", MinCapacity: 100*units.MiB + units.MiB/2}}
	var b strings.Builder
	writeTargets(&b, []string{"a.trace.gz", "b.trace.gz"}, reports, anchors, map[string]float64{"a": 0.1})
	out := b.String()
	assert.Contains(t, out, "| a.trace.gz | gmlake | 100.0 | 0.50 <= 1.0 | **20.0 > 10.0** | 1.0040 <= 1.0100 | 0.0 | 3 of 4 (not warm-up) | 1200 / 1000 = 1.20x <= 1.5 |")
	assert.Contains(t, out, "| b.trace.gz | gmlake | - | 3.0 | 5.0 | **1.0090 > 1.0050 (expandable)** | **2.0** | 0 of 2 (not capacity, converged) | **2000 / 1000 = 2.00x > 1.5** |")
	assert.NotContains(t, out, "| gorgonia |", "only gmlake variants have targets")
}
