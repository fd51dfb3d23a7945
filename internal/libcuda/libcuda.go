// Package libcuda is the CUDA driver API (libcuda.so.1) as this module calls it, bound at run time
// through internal/dl: no cgo, no CUDA headers. It is the one place the driver library is opened
// (once per process; $GMLAKE_LIBCUDA overrides the path) and the one table of the driver
// functions that driver/cuda (virtual memory management), gpu (modules, kernel launches, copies)
// and the NCCL binding (context switching) call.
//
// # ABI
//
// Functions are looked up by the versioned names a program compiled against cuda.h would bind
// (cuMemAlloc -> cuMemAlloc_v2, and so on), so the driver gives each the ABI this file declares;
// drivers keep those symbols (checked on CUDA 13.0). Every call returns a CUresult, a C enum:
// 32 bits, of which Result keeps exactly those. Handles (CUcontext, CUstream, CUevent, CUmodule,
// CUfunction) are pointers and travel as uintptrs; CUdeviceptr and CUmemGenericAllocationHandle
// are 64-bit integers. Structs (CUmemAllocationProp, CUmemAccessDesc) are passed by pointer, as
// Go structs of the C layout (see types.go; layout_test.go checks sizes and offsets).
//
// # Two stages
//
// Open opens the library and resolves only the context calls (cuCtxGetCurrent,
// cuCtxSetCurrent), which is all a library such as NCCL needs from the driver around its own
// calls; Init resolves every other function and calls cuInit. Tests stand a fake in for the
// driver at either stage.
//
// # Contexts and threads
//
// The driver keeps a current context per OS thread, and Go moves goroutines between threads.
// Enter locks the calling goroutine to its thread and makes a context current there; Leave
// restores what was current before and unlocks. Code on the same thread that uses its own
// context (a Gorgonia cu.Ctx, say) is left undisturbed. The cost is a thread-local read, and two
// writes when the thread had another context: nanoseconds next to the calls themselves.
package libcuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gmlake/gmlake/internal/dl"
)

// Result is a CUresult.
type Result int32

// The CUresult codes this module gives a meaning to (cuda.h).
const (
	Success              Result = 0
	InvalidValue         Result = 1
	OutOfMemory          Result = 2
	NotInitialized       Result = 3
	StubLibrary          Result = 34
	DeviceUnavailable    Result = 46
	NoDevice             Result = 100
	InvalidDevice        Result = 101
	InvalidContext       Result = 201
	InvalidHandle        Result = 400
	NotReady             Result = 600
	IllegalAddress       Result = 700
	NotPermitted         Result = 800
	NotSupported         Result = 801
	SystemDriverMismatch Result = 803
)

// Context is a CUcontext.
type Context uintptr

// ErrOtherLibrary is returned by Open and Init when a path is asked for other than the library
// this process already opened: one process has one CUDA driver.
var ErrOtherLibrary = errors.New("libcuda: another driver library is already loaded")

var (
	openMu   sync.Mutex
	lib      *dl.Library
	openErr  error
	openPath string // the name the first Open tried: its path, else $GMLAKE_LIBCUDA, else the soname

	initOnce sync.Once
	initErr  error
	ready    atomic.Bool // every function resolved
)

// fn holds the resolved functions; the context calls after Open, the rest after Init.
var fn struct {
	ctxGetCurrent, ctxSetCurrent uintptr

	init, driverGetVersion, getErrorName                                         uintptr
	deviceGet, deviceGetCount, deviceGetName, deviceGetAttribute, deviceTotalMem uintptr
	primaryCtxRetain, primaryCtxRelease, ctxSynchronize                          uintptr
	memGetAllocationGranularity, memCreate, memRelease                           uintptr
	memAddressReserve, memAddressFree, memMap, memUnmap, memSetAccess            uintptr
	eventCreate, eventRecord, eventQuery, eventDestroy                           uintptr
	memGetInfo, memAlloc, memFree, memAllocHost, memFreeHost                     uintptr
	memcpyHtoD, memcpyDtoH, memcpyHtoDAsync, memcpyDtoHAsync, memcpyDtoDAsync    uintptr
	memsetD8Async, memsetD32Async                                                uintptr
	streamCreate, streamDestroy, streamSynchronize                               uintptr
	moduleLoadData, moduleUnload, moduleGetFunction, launchKernel                uintptr
}

// Open opens the driver library once per process: path, else $GMLAKE_LIBCUDA, else
// libcuda.so.1. A later call naming another path explicitly fails with ErrOtherLibrary; one
// naming none gets the library already open. Errors wrap dl.ErrNotFound or dl.ErrMissingSymbol.
func Open(path string) error {
	openMu.Lock()
	defer openMu.Unlock()
	if lib == nil && openErr == nil {
		spec := dl.CUDADriver
		switch {
		case path != "":
			spec.EnvVar, spec.Candidates = "", []string{path}
			openPath = path
		case os.Getenv(spec.EnvVar) != "":
			openPath = os.Getenv(spec.EnvVar)
		default:
			openPath = spec.Candidates[0]
		}
		l, err := spec.Open()
		if err == nil {
			err = l.Symbols(map[string]*uintptr{"cuCtxGetCurrent": &fn.ctxGetCurrent, "cuCtxSetCurrent": &fn.ctxSetCurrent})
		}
		if err != nil {
			openErr = err
		} else {
			lib = l
		}
	}
	if path != "" && path != openPath {
		return fmt.Errorf("%w: %s asked, %s in use", ErrOtherLibrary, path, openPath)
	}
	return openErr
}

// Path is the name the driver library was opened (or first tried) under.
func Path() string {
	openMu.Lock()
	defer openMu.Unlock()
	return openPath
}

// Init opens the library as Open does, resolves every function in this package and calls
// cuInit(0), once per process. A failing cuInit is returned as its Result in an *InitError.
func Init(path string) error {
	if err := Open(path); err != nil {
		return err
	}
	initOnce.Do(func() {
		initErr = lib.Symbols(map[string]*uintptr{
			"cuInit": &fn.init, "cuDriverGetVersion": &fn.driverGetVersion, "cuGetErrorName": &fn.getErrorName,
			"cuDeviceGet": &fn.deviceGet, "cuDeviceGetCount": &fn.deviceGetCount, "cuDeviceGetName": &fn.deviceGetName,
			"cuDeviceGetAttribute": &fn.deviceGetAttribute, "cuDeviceTotalMem_v2": &fn.deviceTotalMem,
			"cuDevicePrimaryCtxRetain": &fn.primaryCtxRetain, "cuDevicePrimaryCtxRelease_v2": &fn.primaryCtxRelease,
			"cuCtxSynchronize":              &fn.ctxSynchronize,
			"cuMemGetAllocationGranularity": &fn.memGetAllocationGranularity,
			"cuMemCreate":                   &fn.memCreate, "cuMemRelease": &fn.memRelease,
			"cuMemAddressReserve": &fn.memAddressReserve, "cuMemAddressFree": &fn.memAddressFree,
			"cuMemMap": &fn.memMap, "cuMemUnmap": &fn.memUnmap, "cuMemSetAccess": &fn.memSetAccess,
			"cuEventCreate": &fn.eventCreate, "cuEventRecord": &fn.eventRecord, "cuEventQuery": &fn.eventQuery,
			"cuEventDestroy_v2": &fn.eventDestroy, "cuMemGetInfo_v2": &fn.memGetInfo,
			"cuMemAlloc_v2": &fn.memAlloc, "cuMemFree_v2": &fn.memFree,
			"cuMemAllocHost_v2": &fn.memAllocHost, "cuMemFreeHost": &fn.memFreeHost,
			"cuMemcpyHtoD_v2": &fn.memcpyHtoD, "cuMemcpyDtoH_v2": &fn.memcpyDtoH,
			"cuMemcpyHtoDAsync_v2": &fn.memcpyHtoDAsync, "cuMemcpyDtoHAsync_v2": &fn.memcpyDtoHAsync,
			"cuMemcpyDtoDAsync_v2": &fn.memcpyDtoDAsync,
			"cuMemsetD8Async":      &fn.memsetD8Async, "cuMemsetD32Async": &fn.memsetD32Async,
			"cuStreamCreate": &fn.streamCreate, "cuStreamDestroy_v2": &fn.streamDestroy,
			"cuStreamSynchronize": &fn.streamSynchronize,
			"cuModuleLoadData":    &fn.moduleLoadData, "cuModuleUnload": &fn.moduleUnload,
			"cuModuleGetFunction": &fn.moduleGetFunction, "cuLaunchKernel": &fn.launchKernel,
		})
		if initErr != nil {
			return
		}
		ready.Store(true)
		if r := call(fn.init, 0); r != Success {
			initErr = &InitError{Code: r}
		}
	})
	return initErr
}

// InitError is a failed cuInit.
type InitError struct{ Code Result }

func (e *InitError) Error() string {
	return fmt.Sprintf("cuInit: %s (%d)", ErrorName(e.Code), int32(e.Code))
}

// Initialized reports whether Init has resolved every function (cuInit itself may have failed).
func Initialized() bool { return ready.Load() }

// call calls a driver function and keeps its CUresult.
//
//go:uintptrescapes
func call(f uintptr, args ...uintptr) Result {
	return Result(dl.Call32(f, args...))
}

// ErrorName is the driver's name of r ("CUDA_ERROR_OUT_OF_MEMORY"), "" when the driver does not
// know it or is not initialised.
func ErrorName(r Result) string {
	if !Initialized() {
		return ""
	}
	var name uintptr
	if call(fn.getErrorName, uintptr(r), uintptr(unsafe.Pointer(&name))) != Success {
		return ""
	}
	return dl.GoString(name)
}

// CtxGetCurrent is cuCtxGetCurrent: the context current on the calling thread (0 for none).
func CtxGetCurrent() (Context, Result) {
	var c Context
	r := call(fn.ctxGetCurrent, uintptr(unsafe.Pointer(&c)))
	return c, r
}

// CtxSetCurrent is cuCtxSetCurrent on the calling thread.
func CtxSetCurrent(c Context) Result { return call(fn.ctxSetCurrent, uintptr(c)) }

// Enter locks the calling goroutine to its OS thread and makes ctx current there, returning what
// was current before. On Success the caller must call Leave(ctx, prev); on failure the thread is
// already unlocked and nothing was changed.
func Enter(ctx Context) (prev Context, r Result) {
	runtime.LockOSThread()
	prev, r = CtxGetCurrent()
	if r == Success && prev != ctx {
		r = CtxSetCurrent(ctx)
	}
	if r != Success {
		runtime.UnlockOSThread()
	}
	return prev, r
}

// Leave restores prev as the thread's current context after Enter(ctx) and unlocks the thread.
func Leave(ctx, prev Context) {
	if prev != ctx {
		CtxSetCurrent(prev)
	}
	runtime.UnlockOSThread()
}

// In runs f with ctx current on a locked thread (Enter, f, Leave), returning the first failure.
func In(ctx Context, f func() Result) Result {
	prev, r := Enter(ctx)
	if r != Success {
		return r
	}
	defer Leave(ctx, prev)
	return f()
}
