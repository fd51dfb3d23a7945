package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/internal/progress"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/trace"
	"github.com/schollz/progressbar/v3"
)

type replayCmd struct {
	Allocators   []string      `default:"gmlake,gorgonia,caching,direct" sep:"," help:"Allocators to run (${default}; also gmlake-unmarked: gmlake not told where iterations begin)."`
	MinCapacity  bool          `help:"Find the smallest capacity that replays without out-of-memory, and above which every capacity scanned does too (bench.MinCapacity)."`
	Step         units.Bytes   `default:"2MiB" help:"Resolution of the capacity bisection."`
	MaxProbes    int           `name:"max-probes" default:"0" help:"Halving replays per bisection; past them the bound found so far is reported, marked <= (0: bisect to --step)."`
	Capacity     units.Bytes   `help:"Also replay under this capacity (e.g. 40GiB) and report out-of-memory."`
	JSON         bool          `name:"json" help:"One JSON object per line per (trace, allocator)."`
	Plot         string        `type:"path" placeholder:"DIR" help:"Write a PNG per trace of active and reserved bytes over the trace."`
	Markdown     string        `type:"path" placeholder:"FILE" help:"Write a markdown report, with PyTorch's figures from --anchors beside ours."`
	Anchors      string        `type:"existingfile" placeholder:"FILE" help:"PyTorch's measured figures (pytorch-anchors.jsonl)."`
	Steps        []string      `type:"existingfile" sep:"," placeholder:"FILE,..." help:"PyTorch's training step per trace (pytorch-steps.jsonl), the driver-time targets of --markdown."`
	Repeat       int           `default:"0" placeholder:"N" help:"Also replay the iterations N times in a row (resident allocations once) and report driver calls per iteration in the last repetition; 0 = off."`
	GrowthSlack  []float64     `sep:"," placeholder:"F,..." help:"Also replay gmlake with stitch.WithGrowthSlack(F), as gmlake/slack=F: headroom traded for fewer driver calls (needs gmlake in --allocators)."`
	WarmupGrowth []units.Bytes `name:"warmup-growth" sep:"," placeholder:"BYTES,..." help:"Also replay gmlake with stitch.WithWarmupGrowth(BYTES), as gmlake/warmup=BYTES: growth in large steps until an iteration is remembered (needs gmlake in --allocators)."`
	HandleSize   []units.Bytes `name:"handle-size" sep:"," placeholder:"BYTES,..." help:"Also replay gmlake with stitch.WithHandleSize(BYTES), as gmlake/handle=BYTES: handles of one fixed size instead of sized to the headroom (needs gmlake in --allocators)."`
	Jobs         int           `default:"1" help:"(trace, allocator) pairs measured at once; >1 makes ns/pair noisier."`
	Snapshot     string        `type:"path" placeholder:"FILE" help:"Write the first trace's replay through gmlake as a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot's pickle) to FILE."`
	Wide         bool          `help:"Print every figure in the table (over 250 columns); by default it fits 120."`
	Quiet        bool          `help:"No progress bar (there is none unless stderr is a terminal)."`
	Traces       []string      `arg:"" type:"existingfile" name:"TRACE" help:"Trace files."`
}

// errVariantWithoutGMLake: a flag that adds a variant of gmlake (--growth-slack, --warmup-growth,
// --handle-size) was given without gmlake among the allocators.
var errVariantWithoutGMLake = errors.New("gmlake is not among --allocators")

func (c *replayCmd) Run(stdout io.Writer) error {
	if c.Repeat < 0 {
		return fmt.Errorf("--repeat %d: %w", c.Repeat, trace.ErrRepeatCount)
	}
	specs, err := bench.SimSpecs(c.Allocators)
	if err != nil {
		return err
	}
	withGMLake := slices.ContainsFunc(c.Allocators, func(a string) bool { return strings.TrimSpace(a) == "gmlake" })
	for flag, given := range map[string]bool{"--growth-slack": len(c.GrowthSlack) > 0, "--warmup-growth": len(c.WarmupGrowth) > 0,
		"--handle-size": len(c.HandleSize) > 0} {
		if given && !withGMLake {
			return fmt.Errorf("%s: %w", flag, errVariantWithoutGMLake)
		}
	}
	for _, b := range c.WarmupGrowth {
		specs = append(specs, bench.WarmupSpec(uint64(b)))
	}
	for _, b := range c.HandleSize {
		specs = append(specs, bench.HandleSizeSpec(uint64(b)))
	}
	for _, f := range c.GrowthSlack {
		s, err := bench.SlackSpec("gmlake", f)
		if err != nil {
			return err
		}
		specs = append(specs, s)
	}
	var anchors []bench.Anchor
	if c.Anchors != "" {
		if anchors, err = bench.ReadAnchors(c.Anchors); err != nil {
			return err
		}
	}
	steps, err := bench.ReadSteps(c.Steps...)
	if err != nil {
		return err
	}
	traces := make([]*bench.Prepared, 0, len(c.Traces))
	for _, path := range c.Traces {
		t, err := bench.Load(path)
		if err != nil {
			return err
		}
		p, err := bench.Prepare(filepath.Base(path), t)
		if err != nil {
			return err
		}
		traces = append(traces, p)
	}
	reports, failed := c.measureAll(traces, specs)
	if c.JSON {
		err = writeJSON(stdout, reports)
	} else {
		err = writeTable(stdout, reports, tableColumns{minCapacity: c.MinCapacity, capped: c.Capacity > 0, repeat: c.Repeat > 0, wide: c.Wide})
	}
	if err != nil {
		return err
	}
	if c.Plot != "" {
		if err := writePlots(c.Plot, traces, reports); err != nil {
			return err
		}
	}
	if c.Snapshot != "" && len(traces) > 0 {
		if err := writeSnapshot(c.Snapshot, traces[0], os.Stderr); err != nil {
			return err
		}
	}
	if c.Markdown != "" {
		if err := writeMarkdownFile(c.Markdown, reports, anchors, steps, c.Traces); err != nil {
			return err
		}
	}
	return failed
}

// measureAll measures every (trace, spec) pair, c.Jobs at a time. A pair that fails still has its
// report (with Error set); the failures are joined into the returned error.
func (c *replayCmd) measureAll(traces []*bench.Prepared, specs []bench.Spec) ([]bench.Report, error) {
	type job struct{ trace, spec int }
	jobs := make(chan job)
	reports := make([]bench.Report, len(traces)*len(specs))
	errs := make([]error, len(reports))
	bar := progressbar.NewOptions(len(reports), progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetVisibility(!c.Quiet && progress.OnTerminal(os.Stderr)), progressbar.OptionShowCount(),
		progressbar.OptionSetDescription("replaying"), progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond))
	opts := bench.MeasureOptions{MinCapacity: c.MinCapacity, Step: uint64(c.Step), MaxProbes: c.MaxProbes,
		Capacity: uint64(c.Capacity), Repeat: c.Repeat}
	if c.Plot != "" {
		opts.Series = 2000
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range max(1, min(c.Jobs, runtime.NumCPU())) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				i := j.trace*len(specs) + j.spec
				reports[i], errs[i] = bench.Measure(traces[j.trace], specs[j.spec], opts)
				mu.Lock()
				bar.Describe(fmt.Sprintf("%s / %s", traces[j.trace].Name, specs[j.spec].Name))
				_ = bar.Add(1)
				mu.Unlock()
			}
		}()
	}
	for t := range traces {
		for s := range specs {
			jobs <- job{t, s}
		}
	}
	close(jobs)
	wg.Wait()
	_ = bar.Finish()
	return reports, errors.Join(errs...)
}

func writeJSON(w io.Writer, reports []bench.Report) error {
	enc := json.NewEncoder(w)
	for _, r := range reports {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
