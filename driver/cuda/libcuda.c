//go:build cuda || gmlakegpu

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <cudaTypedefs.h>
#include "libcuda.h"

// The functions this package calls. cuda.h #defines some names to versioned ABI symbols
// (cuMemAlloc -> cuMemAlloc_v2); SYMBOL() expands those so dlsym asks for the same symbol a program
// linked against these headers would, and PFN_x (cudaTypedefs.h) is that version's signature.
#define GM_FUNCS(X)                                                                              \
	X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuDeviceGet) X(cuDeviceGetCount)         \
	X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)   \
	X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxSynchronize)        \
	X(cuMemGetAllocationGranularity) X(cuMemCreate) X(cuMemRelease) X(cuMemAddressReserve)       \
	X(cuMemAddressFree) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess) X(cuEventCreate)             \
	X(cuEventRecord) X(cuEventQuery) X(cuEventDestroy) X(cuMemGetInfo) X(cuMemAlloc)             \
	X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8Async) X(cuStreamCreate)            \
	X(cuStreamDestroy) X(cuStreamSynchronize)

#define GM_STR(x) #x
#define SYMBOL(x) GM_STR(x)
#define GM_DECLARE(name) static PFN_##name gm_##name;
GM_FUNCS(GM_DECLARE)

int gm_load(const char *path, char *err, size_t errlen) {
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		snprintf(err, errlen, "%s", dlerror());
		return -1;
	}
#define GM_RESOLVE(name)                                                                       \
	gm_##name = (PFN_##name)dlsym(lib, SYMBOL(name));                                          \
	if (gm_##name == NULL) {                                                                   \
		snprintf(err, errlen, "%s: no symbol %s", path, SYMBOL(name));                         \
		return -1;                                                                             \
	}
	GM_FUNCS(GM_RESOLVE)
	return 0;
}

// enter makes ctx current on this OS thread and leave restores the previous one. A cgo call runs
// start to finish on one OS thread, so a goroutine cannot migrate between the two.
static CUresult enter(CUcontext ctx, CUcontext *prev) {
	CUresult r = gm_cuCtxGetCurrent(prev);
	if (r != CUDA_SUCCESS || *prev == ctx) {
		return r;
	}
	return gm_cuCtxSetCurrent(ctx);
}

static void leave(CUcontext ctx, CUcontext prev) {
	if (prev != ctx) {
		gm_cuCtxSetCurrent(prev);
	}
}

#define IN_CONTEXT(ctx, call)                                                                  \
	CUcontext prev;                                                                            \
	CUresult r = enter(ctx, &prev);                                                            \
	if (r != CUDA_SUCCESS) {                                                                   \
		return r;                                                                              \
	}                                                                                          \
	r = (call);                                                                                \
	leave(ctx, prev);                                                                          \
	return r;

CUresult gm_init(void) { return gm_cuInit(0); }
CUresult gm_driver_version(int *version) { return gm_cuDriverGetVersion(version); }
CUresult gm_error_name(CUresult code, const char **name) { return gm_cuGetErrorName(code, name); }
CUresult gm_device_count(int *count) { return gm_cuDeviceGetCount(count); }

CUresult gm_device_info(int ordinal, char *name, int namelen, size_t *total, int *vmm) {
	CUdevice dev;
	CUresult r = gm_cuDeviceGet(&dev, ordinal);
	if (r == CUDA_SUCCESS) r = gm_cuDeviceGetName(name, namelen, dev);
	if (r == CUDA_SUCCESS) r = gm_cuDeviceTotalMem(total, dev);
	if (r == CUDA_SUCCESS)
		r = gm_cuDeviceGetAttribute(vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
	return r;
}

CUresult gm_primary_retain(int ordinal, CUcontext *ctx) {
	CUdevice dev;
	CUresult r = gm_cuDeviceGet(&dev, ordinal);
	if (r != CUDA_SUCCESS) return r;
	return gm_cuDevicePrimaryCtxRetain(ctx, dev);
}

CUresult gm_primary_release(int ordinal) {
	CUdevice dev;
	CUresult r = gm_cuDeviceGet(&dev, ordinal);
	if (r != CUDA_SUCCESS) return r;
	return gm_cuDevicePrimaryCtxRelease(dev);
}

static CUmemAllocationProp pinned_on(int ordinal) {
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = ordinal;
	return prop;
}

CUresult gm_granularity(CUcontext ctx, int ordinal, int recommended, size_t *gran) {
	CUmemAllocationProp prop = pinned_on(ordinal);
	CUmemAllocationGranularity_flags which =
	    recommended ? CU_MEM_ALLOC_GRANULARITY_RECOMMENDED : CU_MEM_ALLOC_GRANULARITY_MINIMUM;
	IN_CONTEXT(ctx, gm_cuMemGetAllocationGranularity(gran, &prop, which));
}

static CUresult create_chunks(int ordinal, size_t chunk, uint64_t *handles, size_t n) {
	CUmemAllocationProp prop = pinned_on(ordinal);
	for (size_t i = 0; i < n; i++) {
		CUmemGenericAllocationHandle h = 0;
		CUresult r = gm_cuMemCreate(&h, chunk, &prop, 0);
		if (r != CUDA_SUCCESS) {
			while (i > 0) gm_cuMemRelease((CUmemGenericAllocationHandle)handles[--i]);
			return r;
		}
		handles[i] = (uint64_t)h;
	}
	return CUDA_SUCCESS;
}

CUresult gm_create_chunks(CUcontext ctx, int ordinal, size_t chunk, uint64_t *handles, size_t n) {
	IN_CONTEXT(ctx, create_chunks(ordinal, chunk, handles, n));
}

static CUresult release_chunks(const uint64_t *handles, size_t n) {
	CUresult first = CUDA_SUCCESS;
	for (size_t i = 0; i < n; i++) {
		CUresult r = gm_cuMemRelease((CUmemGenericAllocationHandle)handles[i]);
		if (first == CUDA_SUCCESS) first = r;
	}
	return first;
}

CUresult gm_release_chunks(CUcontext ctx, const uint64_t *handles, size_t n) {
	IN_CONTEXT(ctx, release_chunks(handles, n));
}

static CUresult map_chunks(uint64_t addr, size_t chunk, const uint64_t *handles, size_t n) {
	for (size_t i = 0; i < n; i++) {
		CUresult r = gm_cuMemMap((CUdeviceptr)(addr + i * chunk), chunk, 0, (CUmemGenericAllocationHandle)handles[i], 0);
		if (r != CUDA_SUCCESS) {
			while (i > 0) {
				i--;
				gm_cuMemUnmap((CUdeviceptr)(addr + i * chunk), chunk);
			}
			return r;
		}
	}
	return CUDA_SUCCESS;
}

CUresult gm_map_chunks(CUcontext ctx, uint64_t addr, size_t chunk, const uint64_t *handles, size_t n) {
	IN_CONTEXT(ctx, map_chunks(addr, chunk, handles, n));
}

static CUresult unmap_chunks(uint64_t addr, size_t chunk, size_t n, int sync_first) {
	if (sync_first) {
		CUresult r = gm_cuCtxSynchronize();
		if (r != CUDA_SUCCESS) return r;
	}
	CUresult first = CUDA_SUCCESS;
	for (size_t i = 0; i < n; i++) {
		CUresult r = gm_cuMemUnmap((CUdeviceptr)(addr + i * chunk), chunk);
		if (first == CUDA_SUCCESS) first = r;
	}
	return first;
}

CUresult gm_unmap_chunks(CUcontext ctx, uint64_t addr, size_t chunk, size_t n, int sync_first) {
	IN_CONTEXT(ctx, unmap_chunks(addr, chunk, n, sync_first));
}

CUresult gm_address_reserve(CUcontext ctx, size_t size, size_t align, uint64_t *addr) {
	CUdeviceptr p = 0;
	CUcontext prev;
	CUresult r = enter(ctx, &prev);
	if (r != CUDA_SUCCESS) return r;
	r = gm_cuMemAddressReserve(&p, size, align, 0, 0);
	leave(ctx, prev);
	*addr = (uint64_t)p;
	return r;
}

CUresult gm_address_free(CUcontext ctx, uint64_t addr, size_t size) {
	IN_CONTEXT(ctx, gm_cuMemAddressFree((CUdeviceptr)addr, size));
}

CUresult gm_set_access(CUcontext ctx, int ordinal, uint64_t addr, size_t size) {
	CUmemAccessDesc access;
	memset(&access, 0, sizeof access);
	access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	access.location.id = ordinal;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	IN_CONTEXT(ctx, gm_cuMemSetAccess((CUdeviceptr)addr, size, &access, 1));
}

// record_event creates an event unless one is given for reuse, then records it on stream.
static CUresult record_event(uintptr_t reuse, uintptr_t stream, uintptr_t *event) {
	CUevent ev = (CUevent)reuse;
	if (ev == NULL) {
		CUresult r = gm_cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
		if (r != CUDA_SUCCESS) return r;
	}
	*event = (uintptr_t)ev;
	return gm_cuEventRecord(ev, (CUstream)stream);
}

CUresult gm_event_record(CUcontext ctx, uintptr_t reuse, uintptr_t stream, uintptr_t *event) {
	*event = 0;
	IN_CONTEXT(ctx, record_event(reuse, stream, event));
}

CUresult gm_event_query(CUcontext ctx, uintptr_t event) { IN_CONTEXT(ctx, gm_cuEventQuery((CUevent)event)); }
CUresult gm_event_destroy(CUcontext ctx, uintptr_t event) { IN_CONTEXT(ctx, gm_cuEventDestroy((CUevent)event)); }
CUresult gm_ctx_synchronize(CUcontext ctx) { IN_CONTEXT(ctx, gm_cuCtxSynchronize()); }

CUresult gm_mem_info(CUcontext ctx, size_t *free_bytes, size_t *total_bytes) {
	IN_CONTEXT(ctx, gm_cuMemGetInfo(free_bytes, total_bytes));
}

CUresult gm_mem_alloc(CUcontext ctx, size_t size, uint64_t *addr) {
	CUdeviceptr p = 0;
	CUcontext prev;
	CUresult r = enter(ctx, &prev);
	if (r != CUDA_SUCCESS) return r;
	r = gm_cuMemAlloc(&p, size);
	leave(ctx, prev);
	*addr = (uint64_t)p;
	return r;
}

CUresult gm_mem_free(CUcontext ctx, uint64_t addr) { IN_CONTEXT(ctx, gm_cuMemFree((CUdeviceptr)addr)); }

CUresult gm_copy_htod(CUcontext ctx, uint64_t dst, const void *src, size_t n) {
	IN_CONTEXT(ctx, gm_cuMemcpyHtoD((CUdeviceptr)dst, src, n));
}

CUresult gm_copy_dtoh(CUcontext ctx, void *dst, uint64_t src, size_t n) {
	IN_CONTEXT(ctx, gm_cuMemcpyDtoH(dst, (CUdeviceptr)src, n));
}

CUresult gm_memset_async(CUcontext ctx, uint64_t dst, unsigned char value, size_t n, uintptr_t stream) {
	IN_CONTEXT(ctx, gm_cuMemsetD8Async((CUdeviceptr)dst, value, n, (CUstream)stream));
}

static CUresult stream_create(uintptr_t *stream) {
	CUstream s = NULL;
	CUresult r = gm_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
	*stream = (uintptr_t)s;
	return r;
}

CUresult gm_stream_create(CUcontext ctx, uintptr_t *stream) { IN_CONTEXT(ctx, stream_create(stream)); }
CUresult gm_stream_destroy(CUcontext ctx, uintptr_t stream) {
	IN_CONTEXT(ctx, gm_cuStreamDestroy((CUstream)stream));
}
CUresult gm_stream_synchronize(CUcontext ctx, uintptr_t stream) {
	IN_CONTEXT(ctx, gm_cuStreamSynchronize((CUstream)stream));
}
