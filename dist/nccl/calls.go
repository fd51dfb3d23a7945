//go:build cuda || gmlakegpu

package nccl

/*
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// nccl.h's ABI, declared here so that no NCCL header is needed to build.
typedef int ncclResult_t;
typedef void *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef int CUresult;
typedef void *CUcontext;

typedef ncclResult_t (*getVersion_t)(int *);
typedef ncclResult_t (*getUniqueId_t)(ncclUniqueId *);
typedef ncclResult_t (*commInitRank_t)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*commInitAll_t)(ncclComm_t *, int, const int *);
typedef ncclResult_t (*commDestroy_t)(ncclComm_t);
typedef ncclResult_t (*commInt_t)(const ncclComm_t, int *);
typedef ncclResult_t (*commAsyncError_t)(ncclComm_t, ncclResult_t *);
typedef const char *(*getErrorString_t)(ncclResult_t);
typedef ncclResult_t (*allReduce_t)(const void *, void *, size_t, int, int, ncclComm_t, void *);
typedef ncclResult_t (*reduceScatter_t)(const void *, void *, size_t, int, int, ncclComm_t, void *);
typedef ncclResult_t (*allGather_t)(const void *, void *, size_t, int, ncclComm_t, void *);
typedef ncclResult_t (*group_t)(void);
typedef CUresult (*ctxGetCurrent_t)(CUcontext *);
typedef CUresult (*ctxSetCurrent_t)(CUcontext);

static ncclResult_t gn_get_version(void *f, int *v) { return ((getVersion_t)f)(v); }
static ncclResult_t gn_get_unique_id(void *f, void *id) { return ((getUniqueId_t)f)((ncclUniqueId *)id); }
static ncclResult_t gn_comm_init_all(void *f, uintptr_t *comms, int n, const int *devs) {
	return ((commInitAll_t)f)((ncclComm_t *)comms, n, devs);
}
static ncclResult_t gn_comm_destroy(void *f, uintptr_t c) { return ((commDestroy_t)f)((ncclComm_t)c); }
static ncclResult_t gn_comm_int(void *f, uintptr_t c, int *v) { return ((commInt_t)f)((ncclComm_t)c, v); }
static ncclResult_t gn_comm_async_error(void *f, uintptr_t c, ncclResult_t *r) {
	return ((commAsyncError_t)f)((ncclComm_t)c, r);
}
static const char *gn_error_string(void *f, ncclResult_t r) { return ((getErrorString_t)f)(r); }
static ncclResult_t gn_all_reduce(void *f, uintptr_t s, uintptr_t r, size_t n, int dt, int op, uintptr_t c,
                                  uintptr_t st) {
	return ((allReduce_t)f)((const void *)s, (void *)r, n, dt, op, (ncclComm_t)c, (void *)st);
}
static ncclResult_t gn_reduce_scatter(void *f, uintptr_t s, uintptr_t r, size_t n, int dt, int op, uintptr_t c,
                                      uintptr_t st) {
	return ((reduceScatter_t)f)((const void *)s, (void *)r, n, dt, op, (ncclComm_t)c, (void *)st);
}
static ncclResult_t gn_all_gather(void *f, uintptr_t s, uintptr_t r, size_t n, int dt, uintptr_t c, uintptr_t st) {
	return ((allGather_t)f)((const void *)s, (void *)r, n, dt, (ncclComm_t)c, (void *)st);
}
static ncclResult_t gn_group(void *f) { return ((group_t)f)(); }

// gn_comm_init_rank makes ctx current (when non-null) for ncclCommInitRank, which takes its device
// from the calling thread's context, and restores the previous context. *cu is the CUDA error of a
// context switch that failed (then NCCL is not called).
static ncclResult_t gn_comm_init_rank(void *f, void *get, void *set, uintptr_t ctx, uintptr_t *comm, int n,
                                      const void *id, int rank, CUresult *cu) {
	CUcontext prev = NULL;
	*cu = 0;
	if (ctx != 0) {
		if ((*cu = ((ctxGetCurrent_t)get)(&prev)) != 0) return 1;
		if ((CUcontext)ctx != prev && (*cu = ((ctxSetCurrent_t)set)((CUcontext)ctx)) != 0) return 1;
	}
	ncclUniqueId uid;
	memcpy(&uid, id, sizeof uid);
	ncclResult_t r = ((commInitRank_t)f)((ncclComm_t *)comm, n, uid, rank);
	if (ctx != 0 && (CUcontext)ctx != prev) ((ctxSetCurrent_t)set)(prev);
	return r;
}
*/
import "C"

import "unsafe"

// UniqueIDBytes is the size of an ncclUniqueId.
const UniqueIDBytes = 128

func (l *Library) callVersion() (int, Result) {
	var v C.int
	r := C.gn_get_version(l.fn.getVersion, &v)
	return int(v), Result(r)
}

func (l *Library) callUniqueID(id *UniqueID) Result {
	return Result(C.gn_get_unique_id(l.fn.getUniqueID, unsafe.Pointer(&id[0])))
}

func (l *Library) callInitAll(devices []int) ([]uintptr, Result) {
	comms := make([]C.uintptr_t, len(devices))
	devs := make([]C.int, len(devices))
	for i, d := range devices {
		devs[i] = C.int(d)
	}
	r := C.gn_comm_init_all(l.fn.commInitAll, &comms[0], C.int(len(devices)), &devs[0])
	out := make([]uintptr, len(comms))
	for i, c := range comms {
		out[i] = uintptr(c)
	}
	return out, Result(r)
}

// callInitRank returns the communicator, NCCL's result and the CUDA result of switching contexts.
func (l *Library) callInitRank(ctx uintptr, nranks int, id UniqueID, rank int) (uintptr, Result, int) {
	var comm C.uintptr_t
	var cu C.CUresult
	r := C.gn_comm_init_rank(l.fn.commInitRank, l.fn.ctxGetCurrent, l.fn.ctxSetCurrent, C.uintptr_t(ctx), &comm,
		C.int(nranks), unsafe.Pointer(&id[0]), C.int(rank), &cu)
	return uintptr(comm), Result(r), int(cu)
}

func (l *Library) callDestroy(comm uintptr) Result {
	return Result(C.gn_comm_destroy(l.fn.commDestroy, C.uintptr_t(comm)))
}

func (l *Library) callCommInt(f unsafe.Pointer, comm uintptr) (int, Result) {
	var v C.int
	r := C.gn_comm_int(f, C.uintptr_t(comm), &v)
	return int(v), Result(r)
}

func (l *Library) callAsyncError(comm uintptr) (Result, Result) {
	var async C.ncclResult_t
	r := C.gn_comm_async_error(l.fn.commAsyncError, C.uintptr_t(comm), &async)
	return Result(async), Result(r)
}

func (l *Library) callErrorString(r Result) string {
	return C.GoString(C.gn_error_string(l.fn.getErrorString, C.ncclResult_t(r)))
}

func (l *Library) callAllReduce(send, recv uintptr, count int, dt DataType, op ReduceOp, comm, stream uintptr) Result {
	return Result(C.gn_all_reduce(l.fn.allReduce, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(dt),
		C.int(op), C.uintptr_t(comm), C.uintptr_t(stream)))
}

func (l *Library) callReduceScatter(send, recv uintptr, recvCount int, dt DataType, op ReduceOp, comm, stream uintptr) Result {
	return Result(C.gn_reduce_scatter(l.fn.reduceScatter, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(recvCount),
		C.int(dt), C.int(op), C.uintptr_t(comm), C.uintptr_t(stream)))
}

func (l *Library) callAllGather(send, recv uintptr, sendCount int, dt DataType, comm, stream uintptr) Result {
	return Result(C.gn_all_gather(l.fn.allGather, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(sendCount), C.int(dt),
		C.uintptr_t(comm), C.uintptr_t(stream)))
}

func (l *Library) callGroup(f unsafe.Pointer) Result { return Result(C.gn_group(f)) }
