package nccl

import (
	"runtime"
	"structs"
	"unsafe"

	"github.com/gmlake/gmlake/internal/dl"
	"github.com/gmlake/gmlake/internal/libcuda"
)

// The calls into NCCL, with nccl.h's ABI: every function returns an ncclResult_t (a 32-bit C
// enum), communicators (ncclComm_t) and streams are pointers, counts are size_t, data types and
// reductions C ints. No NCCL header is needed to build.

// UniqueIDBytes is the size of an ncclUniqueId.
const UniqueIDBytes = 128

// uniqueID is ncclUniqueId as C lays it out, for passing by value.
type uniqueID struct {
	_        structs.HostLayout
	Internal [UniqueIDBytes]byte
}

func (l *Library) callVersion() (int, Result) {
	var v int32
	r := dl.Call32(l.fn.getVersion, uintptr(unsafe.Pointer(&v)))
	return int(v), Result(r)
}

func (l *Library) callUniqueID(id *UniqueID) Result {
	return Result(dl.Call32(l.fn.getUniqueID, uintptr(unsafe.Pointer(&id[0]))))
}

func (l *Library) callInitAll(devices []int) ([]uintptr, Result) {
	comms := make([]uintptr, len(devices))
	devs := make([]int32, len(devices))
	for i, d := range devices {
		devs[i] = int32(d)
	}
	r := dl.Call32(l.fn.commInitAll, uintptr(unsafe.Pointer(&comms[0])), uintptr(len(devices)), uintptr(unsafe.Pointer(&devs[0])))
	return comms, Result(r)
}

// callInitRank returns the communicator, NCCL's result and the CUDA result of making ctx current
// (when ctx is not 0) for ncclCommInitRank, which takes its device from the calling thread's
// context; the previous context is restored after. When the switch fails NCCL is not called.
func (l *Library) callInitRank(ctx uintptr, nranks int, id UniqueID, rank int) (uintptr, Result, int) {
	if ctx != 0 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		want := libcuda.Context(ctx)
		prev, cu := l.getCtx()
		if cu == libcuda.Success && prev != want {
			cu = l.setCtx(want)
		}
		if cu != libcuda.Success {
			return 0, UnhandledCudaError, int(cu)
		}
		if prev != want {
			defer l.setCtx(prev)
		}
	}
	var comm uintptr
	r := l.commInitRank(&comm, int32(nranks), uniqueID{Internal: id}, int32(rank))
	return comm, Result(r), 0
}

func (l *Library) callDestroy(comm uintptr) Result {
	return Result(dl.Call32(l.fn.commDestroy, comm))
}

func (l *Library) callCommInt(f uintptr, comm uintptr) (int, Result) {
	var v int32
	r := dl.Call32(f, comm, uintptr(unsafe.Pointer(&v)))
	return int(v), Result(r)
}

func (l *Library) callAsyncError(comm uintptr) (Result, Result) {
	var async int32
	r := dl.Call32(l.fn.commAsyncError, comm, uintptr(unsafe.Pointer(&async)))
	return Result(async), Result(r)
}

func (l *Library) callErrorString(r Result) string {
	return dl.GoString(dl.Call(l.fn.getErrorString, uintptr(r)))
}

func (l *Library) callAllReduce(send, recv uintptr, count int, dt DataType, op ReduceOp, comm, stream uintptr) Result {
	return Result(dl.Call32(l.fn.allReduce, send, recv, uintptr(count), uintptr(dt), uintptr(op), comm, stream))
}

func (l *Library) callReduceScatter(send, recv uintptr, recvCount int, dt DataType, op ReduceOp, comm, stream uintptr) Result {
	return Result(dl.Call32(l.fn.reduceScatter, send, recv, uintptr(recvCount), uintptr(dt), uintptr(op), comm, stream))
}

func (l *Library) callAllGather(send, recv uintptr, sendCount int, dt DataType, comm, stream uintptr) Result {
	return Result(dl.Call32(l.fn.allGather, send, recv, uintptr(sendCount), uintptr(dt), comm, stream))
}

func (l *Library) callGroup(f uintptr) Result { return Result(dl.Call32(f)) }
