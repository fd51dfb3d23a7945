// Command gpu-replay replays allocation traces with real GPU memory, through the stitching engine
// on driver/cuda (gmlake), through Gorgonia's pool algorithm over one cuMemAlloc arena (gorgonia)
// and through cuMemAlloc/cuMemFree per request (direct), and beside them through the engine on the
// simulated driver, so that real and simulated figures can be compared line by line.
//
// For each trace it reports peak reserved memory; the smallest capacity under which the engine
// replays the trace (bisected to 2 MiB on the simulator) and whether the real GPU run succeeds at
// exactly that capacity and fails 2 MiB below it; driver calls and the time spent in them before
// the first iteration (setup), in warm-up iterations (0..2) and in steady-state iterations (3 on);
// and wall time per alloc+free pair in steady state. Per iteration it reports the time measured
// inside the allocator's device calls, and the largest of it over the warm-up and the steady
// iterations; with --steps (PyTorch's step per trace) a table judges those against the step, and
// the engine's own time per pair (wall time less the time in calls) against the pool's. Gorgonia's arena is the high-water mark of
// the same algorithm on the simulator, so its run checks that real memory behaves the same.
//
//	gpu-replay [--dir .gpu/traces] [--allocators gmlake,gorgonia,direct] [--sim FILE | --sim-only]
//	    [--repeat N] [--json FILE] [--markdown FILE] [TRACE...]
//
// gmlake-unmarked in --allocators also replays the engine not told where iterations begin
// (baseline.NameGMLakeUnmarked), without a capacity limit, on the GPU and on the simulator.
//
// --repeat N (N > 1) also replays gmlake, with iteration marks and no capacity limit, over the
// trace's iterations played N times in a row (trace.RepeatIterations, as gmlake-bench --repeat),
// on the GPU and on the simulator, and reports the last repetition on its own: the driver calls
// and the time a long run's recurring shapes cost once the engine has seen them; with
// gmlake-unmarked asked for, the same without marks.
//
// --sim-only runs the simulated part alone (no GPU needed) and its JSON lines, given back with
// --sim, spare the GPU run the bisection. Without a usable GPU the command runs the simulated part
// and says so.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

type cli struct {
	Traces       []string      `arg:"" optional:"" help:"Trace files (default: every *.trace.gz in --dir)."`
	Dir          string        `default:".gpu/traces" help:"Folder of traces to replay when none are named."`
	Allocators   []string      `default:"gmlake,gorgonia,direct" help:"Allocators to replay on the GPU (gmlake, gorgonia, direct; also gmlake-unmarked)."`
	SimOnly      bool          `help:"Run only the simulated replays and the bisection (no GPU needed)."`
	Sim          string        `help:"JSON lines of an earlier --sim-only run: minimum capacities are taken from there."`
	JSON         string        `help:"Write JSON lines here (default: standard output)."`
	Markdown     string        `help:"Write the markdown table here (it is also printed to standard error)."`
	DirectLimit  time.Duration `default:"30s" help:"Stop each direct cuMemAlloc replay after this long."`
	BisectProbes int           `name:"bisect-probes" default:"0" help:"Halving replays per bisection; past them the bound so far is reported, not exact (0: bisect to 2 MiB)."`
	Below        bool          `default:"true" negatable:"" help:"Also replay on the GPU 2 MiB below the minimum capacity (expects out-of-memory)."`
	Bisect       bool          `default:"true" negatable:"" help:"Bisect the engine's minimum capacity on the simulator (unless --sim has it) and replay at it on the GPU; --no-bisect replays without a limit only."`
	Steps        []string      `sep:"," placeholder:"FILE,..." help:"PyTorch's training step per trace (pytorch-steps.jsonl): the markdown then judges the measured driver time against it."`
	HandleSize   units.Bytes   `name:"handle-size" help:"Run the engine with stitch.WithHandleSize (handles of one fixed size instead of sized to the headroom), on the GPU and on the simulator."`
	Repeat       int           `default:"1" help:"With N > 1, also replay gmlake (GPU and simulator, no capacity limit) over the iterations repeated N times in a row; the last repetition is reported on its own."`
}

func main() {
	var c cli
	kong.Parse(&c, kong.Name("gpu-replay"), kong.UsageOnError(),
		kong.Description("Replays allocation traces with real GPU memory and compares with the simulator."))
	if err := c.run(os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gpu-replay:", err)
		os.Exit(1)
	}
}

func (c *cli) run(stdout, stderr io.Writer) error {
	engineOptions = nil
	if c.HandleSize > 0 {
		engineOptions = append(engineOptions, stitch.WithHandleSize(uint64(c.HandleSize)))
	}
	files, err := c.traceFiles()
	if err != nil {
		return err
	}
	prior, err := readSim(c.Sim)
	if err != nil {
		return err
	}
	steps, err := bench.ReadSteps(c.Steps...)
	if err != nil {
		return err
	}
	var drv *cuda.Driver
	device := uint64(bench.H200Memory) // the simulated device's memory: the GPU's where there is one
	header := "GPU replay, simulator only"
	if !c.SimOnly {
		drv, err = cuda.New(cuda.WithGranularity(granularity))
		switch {
		case errors.Is(err, cuda.ErrUnavailable):
			fmt.Fprintf(stderr, "no usable GPU (%v): simulated replays only\n", err)
		case err != nil:
			return err
		default:
			defer drv.Close()
			_, total, err := drv.MemInfo()
			if err != nil {
				return err
			}
			device = total
			v, _ := cuda.DriverVersion()
			header = fmt.Sprintf("GPU replay on %s (%s, driver API %d), %s", drv.Name(), units.FormatGiB(total)+" GiB", v,
				time.Now().UTC().Format("2006-01-02"))
			fmt.Fprintln(stderr, header)
		}
	}
	out := stdout
	if c.JSON != "" {
		f, err := os.Create(c.JSON)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	// Records are written trace by trace, so a run cut short still leaves what it measured.
	var recs []record
	for _, f := range files {
		t, err := trace.ReadFile(f)
		if err != nil {
			return err
		}
		p, err := prepare(filepath.Base(f), t)
		if err != nil {
			return err
		}
		got := c.simRuns(p, prior, device, stderr)
		if drv != nil {
			got = append(got, c.gpuRuns(p, drv, got, stderr)...)
		}
		if c.Repeat > 1 {
			rp, err := prepareRepeated(filepath.Base(f), t, c.Repeat)
			if err != nil {
				return err
			}
			got = append(got, c.repeatRuns(rp, drv, device, stderr)...)
		}
		if err := writeJSON(out, got); err != nil {
			return err
		}
		recs = append(recs, got...)
	}
	failed := false
	for _, r := range recs {
		failed = failed || r.Error != ""
	}
	var table strings.Builder
	markdown(&table, recs, header)
	markdownRepeated(&table, recs)
	markdownTargets(&table, recs, steps)
	fmt.Fprint(stderr, table.String())
	if c.Markdown != "" {
		if err := os.WriteFile(c.Markdown, []byte(table.String()), 0o644); err != nil {
			return err
		}
	}
	if failed {
		return errors.New("some replays failed (see the error fields)")
	}
	return nil
}

func (c *cli) traceFiles() ([]string, error) {
	if len(c.Traces) > 0 {
		return c.Traces, nil
	}
	files, err := filepath.Glob(filepath.Join(c.Dir, "*.trace.gz"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.trace.gz in %s", c.Dir)
	}
	slices.Sort(files)
	return files, nil
}

func (c *cli) wants(alloc string) bool {
	for _, a := range c.Allocators {
		if strings.TrimSpace(a) == alloc {
			return true
		}
	}
	return false
}
