package graphexec

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/gpu/pool"
	"github.com/gmlake/gmlake/stitch"
)

// Compile reports an op it cannot lower before it touches the device (here: none at all).
func TestCompileRejectsUnsupportedOpsFirst(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(1, 1, 4, 4), gorgonia.WithName("img"))
	_, err := gorgonia.MaxPool2D(x, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2})
	require.NoError(t, err)
	_, err = Compile(nil, g)
	require.ErrorIs(t, err, ErrUnsupported)
	var ue *UnsupportedOpError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "*gorgonia.maxPoolOp", ue.Type)
}

// gmlakeDevice opens GPU 0 on memory from gmlake's engine over driver/cuda.
func gmlakeDevice(t *testing.T) (*gpu.Device, pool.Pool) {
	t.Helper()
	newDevice(t) // skips without a GPU
	drv, err := cuda.New()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, drv.Close()) })
	p, err := pool.New("gmlake", drv, 4<<30)
	require.NoError(t, err)
	d, err := gpu.New(gpu.WithAllocator(p))
	require.NoError(t, err)
	return d, p
}

// Every node of the user graphs (forward, gradients and intermediates), computed on the GPU, matches
// Gorgonia's CPU ops on the same inputs: a wrong lowering shows up at the op that introduces it.
func TestUserGraphNodesOnGPU(t *testing.T) {
	d, p := gmlakeDevice(t)
	for _, name := range []string{"mlp", "block", "misc"} {
		t.Run(name, func(t *testing.T) {
			ug := userGraphs(t)[name]
			want := gorgoniaRun(t, ug.G)
			var ops []*gorgonia.Node
			for _, n := range ug.G.AllNodes() {
				if n.Op() != nil {
					ops = append(ops, n)
				}
			}
			m, err := Compile(d, ug.G, WithOutputs(ops...))
			require.NoError(t, err)
			require.NoError(t, m.Run())
			bad, worst, worstNode := 0, 0.0, ""
			for _, n := range ops {
				got, err := m.Value(n)
				require.NoError(t, err, "%v", n)
				w := want[n.ID()]
				require.Len(t, got, len(w), "%v", n)
				maxAbs, rel := diff(got, w)
				if math.IsNaN(maxAbs) || (rel > 1e-4 && maxAbs > 1e-5) {
					bad++
					if bad <= 20 {
						t.Errorf("%T %v %v (%v): max abs %.3g, relative %.3g", n.Op(), n.Op(), n.Shape(), n.Name(), maxAbs, rel)
					}
				}
				if rel > worst && maxAbs > 1e-6 {
					worst, worstNode = rel, n.Op().String()
				}
			}
			t.Logf("%s: %d op nodes on the GPU, %d off; worst relative error %.2e (%s)", name, len(ops), bad, worst,
				worstNode)
			require.NoError(t, m.Close())
		})
	}
	t.Run("dropout", func(t *testing.T) {
		mk := nodeMaker(t)
		g := gorgonia.NewGraph()
		x := input(g, "x", 128, 128)
		w := input(g, "w", 128, 128)
		y := mk(gorgonia.Dropout(x, 0.25))
		loss := mk(gorgonia.Sum(mk(gorgonia.HadamardProd(y, w))))
		grads, err := gorgonia.Grad(loss, x)
		require.NoError(t, err)
		ug := &userGraph{G: g, Inputs: []*gorgonia.Node{x, w}}
		setInputs(t, ug, 5)
		m, err := Compile(d, g, WithOutputs(y, grads[0]))
		require.NoError(t, err)
		require.NoError(t, m.Run())
		ys, err := m.Value(y)
		require.NoError(t, err)
		dx, err := m.Value(grads[0])
		require.NoError(t, err)
		xs, ws := x.Value().Data().([]float32), w.Value().Data().([]float32)
		kept, wrong := 0, 0
		for i := range xs {
			switch {
			case ys[i] != 0:
				kept++
				if ys[i] != xs[i]/float32(0.75) || dx[i] != ws[i]/float32(0.25) {
					wrong++
				}
			case dx[i] != 0:
				wrong++
			}
		}
		t.Logf("dropout p=0.25 on the GPU: kept %d of %d, %d elements off Gorgonia's formulas", kept, len(xs), wrong)
		assert.Zero(t, wrong)
		assert.InDelta(t, 0.75, float64(kept)/float64(len(xs)), 0.02)
		require.NoError(t, m.Close())
	})
	require.NoError(t, d.Close())
	assert.Zero(t, d.MemoryStats().LiveBytes, "every tensor returned to gmlake")
	if c, ok := p.(interface{ Check() error }); ok {
		assert.NoError(t, c.Check())
	}
	require.NoError(t, p.Close())
}

// trainingRecord is one user graph's GPU training run against the CPU run of the same graph.
type trainingRecord struct {
	Graph          string    `json:"graph"`
	Date           string    `json:"date"`
	Machine        string    `json:"machine"`
	Steps          int       `json:"steps"`
	LR             float32   `json:"lr"`
	Params         int       `json:"params"`
	OpNodes        int       `json:"op_nodes"`
	LossGPU        []float32 `json:"loss_gpu"`
	LossCPU        []float32 `json:"loss_cpu"`
	MaxLossAbsDiff float64   `json:"max_loss_abs_diff"`
	MaxLossRelDiff float64   `json:"max_loss_rel_diff"`
	MaxGradAbsDiff float64   `json:"max_grad_abs_diff"`
	MaxGradRelL2   float64   `json:"max_grad_rel_l2"` // worst gradient's ‖gpu − cpu‖ / ‖cpu‖ over all steps
	MaxParamAbs    float64   `json:"max_param_abs_diff_end"`
	GPUStepMedian  float64   `json:"gpu_step_ms_median"`
	GPUStepMean    float64   `json:"gpu_step_ms_mean"`
	CPUStepMedian  float64   `json:"cpu_step_ms_median"`
	GmlakeReserved uint64    `json:"gmlake_peak_reserved_bytes"`
	DriverCalls    uint64    `json:"gmlake_driver_calls"`
	PeakLive       uint64    `json:"device_peak_live_bytes"`
	Allocs         uint64    `json:"device_allocs"`
	Frees          uint64    `json:"device_frees"`
	Engine         any       `json:"gmlake_stats"`
}

func median(ms []float64) float64 {
	s := slices.Clone(ms)
	sort.Float64s(s)
	return s[len(s)/2]
}

// A user's MLP and transformer block, written with Gorgonia's ops only, train with SGD on the GPU
// on gmlake memory through the Machine, and on the CPU with Gorgonia's TapeMachine on the Go heap,
// from the same weights on the same batch: losses per step and every gradient at every step must
// agree within float32 tolerance. The measurements go to $GMLAKE_RESULTS/gpu-graphs.json.
func TestUserGraphsTrainOnGPU(t *testing.T) {
	var records []trainingRecord
	for _, tc := range []struct {
		name  string
		build func() (*userGraph, error)
		steps int
		lr    float32
	}{
		{"mlp", func() (*userGraph, error) { return userMLP(64, 32, 64, 10, 7) }, 100, 0.1},
		{"transformer-block", func() (*userGraph, error) { return userBlock(4, 16, 32, 4, 8, 7) }, 60, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, p := gmlakeDevice(t)
			cpu, err := tc.build()
			require.NoError(t, err)
			dev, err := tc.build()
			require.NoError(t, err)
			setInputs(t, cpu, 11)
			setInputs(t, dev, 11)

			vm := gorgonia.NewTapeMachine(cpu.G)
			defer vm.Close()
			m, err := Compile(d, dev.G, WithOutputs(append([]*gorgonia.Node{dev.Loss}, dev.Grads...)...))
			require.NoError(t, err)
			params := make([]*gpu.Tensor, len(dev.Params))
			nParams := 0
			for i, n := range dev.Params {
				v := n.Value().(*tensor.Dense)
				params[i], err = d.FromHost(v.Data().([]float32), []int(v.Shape())...)
				require.NoError(t, err)
				require.NoError(t, m.Bind(n, params[i]))
				nParams += v.Len()
			}
			rec := trainingRecord{Graph: tc.name, Date: time.Now().UTC().Format("2006-01-02"), Machine: d.Name(),
				Steps: tc.steps, LR: tc.lr, Params: nParams}
			for _, n := range dev.G.AllNodes() {
				if n.Op() != nil {
					rec.OpNodes++
				}
			}
			var gpuMs, cpuMs []float64
			for step := range tc.steps {
				start := time.Now()
				require.NoError(t, vm.RunAll(), "CPU step %d", step)
				cpuLoss := cpu.Loss.Value().Data().(float32)
				cpuGrads := make([][]float32, len(cpu.Grads))
				for i, gn := range cpu.Grads {
					cpuGrads[i] = slices.Clone(gn.Value().Data().([]float32))
				}
				for i, pn := range cpu.Params {
					w := pn.Value().Data().([]float32)
					for j := range w {
						w[j] -= tc.lr * cpuGrads[i][j]
					}
				}
				vm.Reset()
				cpuMs = append(cpuMs, float64(time.Since(start).Microseconds())/1e3)

				start = time.Now()
				require.NoError(t, m.Run(), "GPU step %d", step)
				for i, gn := range dev.Grads {
					gt, err := m.Tensor(gn)
					require.NoError(t, err)
					require.NoError(t, d.Axpy(params[i], gt, -tc.lr))
				}
				loss, err := m.Value(dev.Loss) // waits for the step
				require.NoError(t, err)
				gpuMs = append(gpuMs, float64(time.Since(start).Microseconds())/1e3)

				rec.LossGPU, rec.LossCPU = append(rec.LossGPU, loss[0]), append(rec.LossCPU, cpuLoss)
				la := math.Abs(float64(loss[0]) - float64(cpuLoss))
				rec.MaxLossAbsDiff = math.Max(rec.MaxLossAbsDiff, la)
				rec.MaxLossRelDiff = math.Max(rec.MaxLossRelDiff, la/math.Max(math.Abs(float64(cpuLoss)), 1e-30))
				for i, gn := range dev.Grads {
					got, err := m.Value(gn)
					require.NoError(t, err)
					maxAbs, rel := diff(got, cpuGrads[i])
					require.False(t, math.IsNaN(maxAbs), "step %d: NaN in the gradient of %s", step, dev.Params[i].Name())
					rec.MaxGradAbsDiff = math.Max(rec.MaxGradAbsDiff, maxAbs)
					rec.MaxGradRelL2 = math.Max(rec.MaxGradRelL2, rel)
				}
			}
			for i, pn := range cpu.Params {
				got, err := params[i].ToHost()
				require.NoError(t, err)
				maxAbs, _ := diff(got, pn.Value().Data().([]float32))
				rec.MaxParamAbs = math.Max(rec.MaxParamAbs, maxAbs)
			}
			rec.GPUStepMedian, rec.CPUStepMedian = median(gpuMs[1:]), median(cpuMs[1:])
			for _, v := range gpuMs[1:] {
				rec.GPUStepMean += v / float64(len(gpuMs)-1)
			}
			require.NoError(t, m.Close())
			for _, pt := range params {
				require.NoError(t, pt.Free())
			}
			ms := d.MemoryStats()
			rec.PeakLive, rec.Allocs, rec.Frees = ms.PeakLiveBytes, ms.Allocs, ms.Frees
			rec.GmlakeReserved, rec.DriverCalls = p.PeakReserved(), p.DriverCalls()
			if s, ok := p.(interface{ Stats() stitch.Stats }); ok {
				rec.Engine = s.Stats()
			}
			require.NoError(t, d.Close())
			assert.Zero(t, d.MemoryStats().LiveBytes, "every tensor returned to gmlake")
			if c, ok := p.(interface{ Check() error }); ok {
				assert.NoError(t, c.Check(), "gmlake's Check after training")
			}
			require.NoError(t, p.Close())

			js, _ := json.Marshal(rec)
			t.Logf("%s", js)
			t.Logf("%s: %d steps, loss %.6f -> %.6f (CPU %.6f -> %.6f); max loss diff %.3g abs %.3g rel; max gradient "+
				"diff %.3g abs, %.3g relative L2; params at the end within %.3g; GPU step %.3f ms median, CPU %.3f ms",
				tc.name, tc.steps, rec.LossGPU[0], rec.LossGPU[tc.steps-1], rec.LossCPU[0], rec.LossCPU[tc.steps-1],
				rec.MaxLossAbsDiff, rec.MaxLossRelDiff, rec.MaxGradAbsDiff, rec.MaxGradRelL2, rec.MaxParamAbs,
				rec.GPUStepMedian, rec.CPUStepMedian)
			assert.Less(t, rec.LossGPU[tc.steps-1], rec.LossGPU[0]*0.9, "it trains")
			assert.LessOrEqual(t, rec.MaxLossRelDiff, 1e-4, "losses per step")
			assert.LessOrEqual(t, rec.MaxGradRelL2, 1e-3, "gradients per step")
			records = append(records, rec)
		})
	}
	if dir := os.Getenv("GMLAKE_RESULTS"); dir != "" && len(records) > 0 {
		js, err := json.MarshalIndent(records, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "gpu-graphs.json"), js, 0o644))
	}
}
