package bench

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gmlake/gmlake/internal/units"
)

// Anchor is one line of ../shared/traces/pytorch-anchors.jsonl: PyTorch's own allocator measured on
// a trace on the GPU ("pytorch-default" or "pytorch-expandable").
type Anchor struct {
	Trace              string  `json:"trace"`
	Allocator          string  `json:"allocator"`
	PeakActive         uint64  `json:"peak_active"`
	PeakReserved       uint64  `json:"peak_reserved"`
	Fragmentation      float64 `json:"fragmentation"`
	MinCapacity        uint64  `json:"min_capacity"`
	CapacityOverActive float64 `json:"capacity_over_active"`
	// Device is the GPU the figures were measured on and Step the resolution of the capacity
	// bisection (scripts/pytorch-anchors.py writes both); ../shared/traces/pytorch-anchors.jsonl
	// has neither: an H200, 256 MiB (its README).
	Device string `json:"device,omitempty"`
	Step   uint64 `json:"step,omitempty"`
}

// AnchorSource says where anchors were measured and to what step their capacities were bisected,
// for a report: the devices the anchors name (an H200 where they name none) and the coarsest step
// (256 MiB where one names none).
func AnchorSource(anchors []Anchor) (devices []string, step uint64) {
	for _, a := range anchors {
		d := cmp.Or(a.Device, "an H200")
		if !slices.Contains(devices, d) {
			devices = append(devices, d)
		}
		step = max(step, cmp.Or(a.Step, 256*units.MiB))
	}
	return devices, step
}

// ReadAnchors reads a JSON-lines file of anchors.
func ReadAnchors(path string) ([]Anchor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Anchor
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var a Anchor
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// TraceStem is a trace file's name without directory and format suffixes, so that a text trace and
// a snapshot of the same run ("x.trace.gz", "x.noweights.trace.gz", "x.snapshot.pickle.gz") match.
func TraceStem(name string) string {
	name = filepath.Base(name)
	for _, suffix := range []string{".gz", ".pickle", ".snapshot", ".trace", ".noweights"} {
		name = strings.TrimSuffix(name, suffix)
	}
	return name
}

// Step is one line of a pytorch-steps.jsonl (../shared/traces, testdata/heldout): PyTorch's own
// training step on the GPU for the workload a trace recorded, in seconds. Allocator time in an
// iteration is judged against it.
type Step struct {
	Trace string  `json:"trace"`
	StepS float64 `json:"step_s"`
}

// ReadSteps reads JSON-lines files of steps; the step of each trace, by TraceStem.
func ReadSteps(paths ...string) (map[string]float64, error) {
	out := make(map[string]float64)
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for line := 1; sc.Scan(); line++ {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var s Step
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s:%d: %w", path, line, err)
			}
			if s.Trace == "" || !(s.StepS > 0) {
				f.Close()
				return nil, fmt.Errorf("%s:%d: %w: a step needs a trace and step_s > 0", path, line, ErrStepFormat)
			}
			out[TraceStem(s.Trace)] = s.StepS
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

// ErrStepFormat is wrapped by ReadSteps when a line is not a step.
var ErrStepFormat = errors.New("bench: bad step line")
