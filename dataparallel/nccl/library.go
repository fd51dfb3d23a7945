package nccl

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gmlake/gmlake/internal/dl"
	"github.com/gmlake/gmlake/internal/libcuda"
)

// EnvVar names the environment variable that, when set, is the only NCCL library tried.
const EnvVar = "GMLAKE_NCCL"

// DriverEnvVar overrides the CUDA driver library's path, as for package driver/cuda.
const DriverEnvVar = "GMLAKE_LIBCUDA"

// NVLSEnvVar is NCCL's switch for NVLink SHARP / multicast, set to "0" by Open unless WithNVLS(true).
const NVLSEnvVar = "NCCL_NVLS_ENABLE"

// Candidates are the NCCL names tried when GMLAKE_NCCL is unset: the soname on the default path
// (Debian and Ubuntu put it in /usr/lib/x86_64-linux-gnu), then the usual CUDA folders.
var Candidates = dl.NCCL.Candidates

// UniqueID is an ncclUniqueId: made by one rank (UniqueID), handed to every other out of band.
type UniqueID [UniqueIDBytes]byte

// DataType is an ncclDataType_t.
type DataType int

// NCCL's data types (nccl.h).
const (
	Int8     DataType = 0
	Uint8    DataType = 1
	Int32    DataType = 2
	Uint32   DataType = 3
	Int64    DataType = 4
	Uint64   DataType = 5
	Float16  DataType = 6
	Float32  DataType = 7
	Float64  DataType = 8
	BFloat16 DataType = 9
)

// Size is the element size in bytes.
func (t DataType) Size() int {
	switch t {
	case Int8, Uint8:
		return 1
	case Float16, BFloat16:
		return 2
	case Int32, Uint32, Float32:
		return 4
	case Int64, Uint64, Float64:
		return 8
	}
	return 0
}

// ReduceOp is an ncclRedOp_t.
type ReduceOp int

// NCCL's built-in reductions (nccl.h). Avg needs NCCL ≥ 2.10.
const (
	Sum  ReduceOp = 0
	Prod ReduceOp = 1
	Max  ReduceOp = 2
	Min  ReduceOp = 3
	Avg  ReduceOp = 4
)

// Library is the opened NCCL. One per process: Open returns the same one to every caller.
type Library struct {
	path string
	log  *slog.Logger
	fn   struct {
		getVersion, getUniqueID, commInitAll, commDestroy     uintptr
		commCount, commCuDevice, commUserRank, commAsyncError uintptr
		getErrorString, allReduce, reduceScatter, allGather   uintptr
		groupStart, groupEnd                                  uintptr
	}
	// commInitRank takes the unique id by value (a 128-byte struct), which only a call that
	// knows the argument's type passes right on every platform.
	commInitRank func(comm *uintptr, nranks int32, id uniqueID, rank int32) int32
	// getCtx and setCtx are the driver's cuCtxGetCurrent and cuCtxSetCurrent (internal/libcuda's,
	// or a fake's in tests), for InitRank.
	getCtx func() (libcuda.Context, libcuda.Result)
	setCtx func(libcuda.Context) libcuda.Result
}

var (
	openOnce sync.Once
	opened   *Library
	openErr  error
)

// Open opens NCCL and the CUDA driver (once per process; options of later calls are ignored)
// and resolves every symbol used. It needs no GPU. Unless WithNVLS(true), it first sets
// NCCL_NVLS_ENABLE=0. Errors wrap ErrUnavailable.
func Open(opts ...Option) (*Library, error) {
	openOnce.Do(func() {
		cfg := config{logger: slog.New(slog.DiscardHandler)}
		for _, o := range opts {
			o(&cfg)
		}
		opened, openErr = open(cfg)
	})
	return opened, openErr
}

func open(cfg config) (*Library, error) {
	if !cfg.nvls {
		if v, ok := os.LookupEnv(NVLSEnvVar); ok && v != "0" {
			cfg.logger.Warn("nccl: overriding NVLink multicast setting", "var", NVLSEnvVar, "was", v)
		}
		if err := os.Setenv(NVLSEnvVar, "0"); err != nil {
			return nil, fmt.Errorf("nccl: setting %s: %w", NVLSEnvVar, err)
		}
	}
	l := &Library{log: cfg.logger}
	f := &l.fn
	lib, err := dl.Open(dl.NCCL.What, EnvVar, Candidates)
	if err == nil {
		err = lib.Func("ncclCommInitRank", &l.commInitRank)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	path, err := resolve(lib, map[string]*uintptr{
		"ncclGetVersion": &f.getVersion, "ncclGetUniqueId": &f.getUniqueID, "ncclCommInitAll": &f.commInitAll,
		"ncclCommDestroy": &f.commDestroy, "ncclCommCount": &f.commCount,
		"ncclCommCuDevice": &f.commCuDevice, "ncclCommUserRank": &f.commUserRank,
		"ncclCommGetAsyncError": &f.commAsyncError, "ncclGetErrorString": &f.getErrorString,
		"ncclAllReduce": &f.allReduce, "ncclReduceScatter": &f.reduceScatter,
		"ncclAllGather": &f.allGather, "ncclGroupStart": &f.groupStart, "ncclGroupEnd": &f.groupEnd,
	})
	if err != nil {
		return nil, err
	}
	l.path = path
	// InitRank makes a context current around NCCL's call: the driver's context calls.
	driver := ""
	if cfg.contextsFromNCCL {
		var get, set uintptr
		if _, err := resolve(lib, map[string]*uintptr{"cuCtxGetCurrent": &get, "cuCtxSetCurrent": &set}); err != nil {
			return nil, err
		}
		l.getCtx = func() (libcuda.Context, libcuda.Result) {
			var c libcuda.Context
			r := dl.Call32(get, uintptr(unsafe.Pointer(&c)))
			return c, libcuda.Result(r)
		}
		l.setCtx = func(c libcuda.Context) libcuda.Result { return libcuda.Result(dl.Call32(set, uintptr(c))) }
		driver = path
	} else {
		if err := libcuda.Open(""); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		l.getCtx, l.setCtx = libcuda.CtxGetCurrent, libcuda.CtxSetCurrent
		driver = libcuda.Path()
	}
	cfg.logger.Debug("nccl: opened", "path", path, "driver", driver)
	return l, nil
}

// resolve resolves table in lib; a failure wraps ErrUnavailable and the loader's *SymbolError.
func resolve(lib *dl.Library, table map[string]*uintptr) (string, error) {
	if err := lib.Symbols(table); err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return lib.Path(), nil
}

// Path is the name NCCL was opened under.
func (l *Library) Path() string { return l.path }

// Version is NCCL's version code, e.g. 22807 for 2.28.7.
func (l *Library) Version() (int, error) {
	v, r := l.callVersion()
	return v, l.check("ncclGetVersion", r)
}

// UniqueID makes the id one rank hands to all others before InitRank.
func (l *Library) UniqueID() (UniqueID, error) {
	var id UniqueID
	return id, l.check("ncclGetUniqueId", l.callUniqueID(&id))
}

// ErrorString is NCCL's description of a result code.
func (l *Library) ErrorString(r Result) string { return l.callErrorString(r) }

// check turns a result into nil or an *Error with NCCL's message.
func (l *Library) check(call string, r Result) error {
	if r == Success {
		return nil
	}
	return &Error{Call: call, Result: r, Message: l.callErrorString(r)}
}

// GroupStart begins a group of NCCL calls on the calling OS thread (ncclGroupStart). The caller
// must keep its goroutine on one thread until GroupEnd; Group does that for it.
func (l *Library) GroupStart() error { return l.check("ncclGroupStart", l.callGroup(l.fn.groupStart)) }

// GroupEnd ends the group begun by GroupStart on this thread and launches its calls (ncclGroupEnd).
func (l *Library) GroupEnd() error { return l.check("ncclGroupEnd", l.callGroup(l.fn.groupEnd)) }

// Group runs fn between GroupStart and GroupEnd with the goroutine locked to its OS thread, so the
// calls fn makes (one collective per communicator, say) are launched together. The group is ended
// even when fn fails; fn's error comes first.
func (l *Library) Group(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := l.GroupStart(); err != nil {
		return err
	}
	fnErr := fn()
	endErr := l.GroupEnd()
	if fnErr != nil {
		return fnErr
	}
	return endErr
}
