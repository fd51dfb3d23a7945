package gpu

import (
	"fmt"
	"math"
	"sync"

	"github.com/gmlake/gmlake/gpu/kernels"
	"github.com/gmlake/gmlake/gpu/nvrtc"
	"github.com/gmlake/gmlake/internal/libcuda"
)

// ptxCache holds the PTX of each source per architecture for the life of the process: compiling
// all sources takes about a second, which a test suite or a reopened Device should pay once.
var ptxCache struct {
	sync.Mutex
	ptx map[string][]byte // "arch/source" -> NUL-terminated PTX
}

func compileCached(c *nvrtc.Compiler, src kernels.Source, arch string) ([]byte, error) {
	ptxCache.Lock()
	defer ptxCache.Unlock()
	key := arch + "/" + src.Name
	if p, ok := ptxCache.ptx[key]; ok {
		return p, nil
	}
	p, err := c.Compile(src.Name, src.Code, "--gpu-architecture="+arch, "--std=c++14")
	if err != nil {
		return nil, err
	}
	if ptxCache.ptx == nil {
		ptxCache.ptx = map[string][]byte{}
	}
	ptxCache.ptx[key] = p
	return p, nil
}

func kernelIndex() map[string]string { return kernels.Index() }

// function returns the loaded kernel called name, compiling and loading its source on first use.
func (d *Device) function(name string) (uintptr, error) {
	if fn, ok := d.functions[name]; ok {
		return fn, nil
	}
	srcName, ok := d.kernelSrc[name]
	if !ok {
		return 0, fmt.Errorf("gpu: no kernel %q in gpu/kernels", name)
	}
	var src kernels.Source
	for _, s := range kernels.All() {
		if s.Name == srcName {
			src = s
		}
	}
	ptx, err := compileCached(d.compiler, src, d.Arch())
	if err != nil {
		return 0, err
	}
	var mod uintptr
	r := d.in(func() (r libcuda.Result) {
		mod, r = libcuda.ModuleLoadData(ptx)
		return r
	})
	if err := check("cuModuleLoadData", r); err != nil {
		return 0, fmt.Errorf("gpu: loading %s: %w", src.Name, err)
	}
	d.modules[src.Name] = mod
	for _, k := range src.Kernels {
		var fn uintptr
		r := d.in(func() (r libcuda.Result) {
			fn, r = libcuda.ModuleGetFunction(mod, k)
			return r
		})
		if err := check("cuModuleGetFunction", r); err != nil {
			return 0, fmt.Errorf("gpu: kernel %s in %s: %w", k, src.Name, err)
		}
		d.functions[k] = fn
	}
	d.log.Info("gpu: loaded kernels", "source", src.Name, "kernels", len(src.Kernels), "ptx_bytes", len(ptx))
	return d.functions[name], nil
}

// Launch shapes.
const (
	elementBlock = 256 // threads per block for elementwise kernels
	maxGrid      = 1 << 16
)

// elementGrid is the grid for n elements with grid-stride loops: enough blocks to fill the GPU
// several times over, never more than there are elements to cover.
func (d *Device) elementGrid(n int) int {
	g := (n + elementBlock - 1) / elementBlock
	if limit := d.sms * 32; g > limit {
		g = limit
	}
	return max(g, 1)
}

// rowBlock is the block size for kernels with one block per row of cols elements: a multiple of 32,
// at most 1024, no wider than the row needs.
func rowBlock(cols int) int {
	b := 32
	for b < cols && b < 1024 {
		b *= 2
	}
	if b > 256 && cols < 4096 {
		b = 256
	}
	return b
}

// launch queues kernel name on the Device's stream. Each argument becomes one kernel parameter:
// uintptr (device pointers) and int (long long in the kernels) take 8 bytes, int32 (int) and
// float32 (float) 4.
func (d *Device) launch(name string, grid, block int, args ...any) error {
	if d.closed {
		return ErrClosed
	}
	fn, err := d.function(name)
	if err != nil {
		return err
	}
	if len(args) > libcuda.MaxKernelArgs {
		return fmt.Errorf("gpu: %s: %d arguments, at most %d", name, len(args), libcuda.MaxKernelArgs)
	}
	params := new(libcuda.KernelArgs)
	for i, a := range args {
		switch v := a.(type) {
		case uintptr:
			params.Slots[i] = uint64(v)
		case int:
			params.Slots[i] = uint64(int64(v))
		case int32:
			params.Slots[i] = uint64(uint32(v))
		case float32:
			params.Slots[i] = uint64(math.Float32bits(v))
		default:
			return fmt.Errorf("gpu: %s: argument %d has unsupported type %T", name, i, a)
		}
	}
	grid = min(max(grid, 1), maxGrid)
	err = check("cuLaunchKernel", d.in(func() libcuda.Result {
		return libcuda.LaunchKernel(fn, uint32(grid), uint32(block), 0, d.stream, params, len(args))
	}))
	if err != nil {
		return fmt.Errorf("gpu: launching %s: %w", name, err)
	}
	return nil
}
