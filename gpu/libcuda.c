//go:build cuda || gmlakegpu

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <cudaTypedefs.h>
#include "libcuda.h"

// cuda.h #defines some names to versioned ABI symbols (cuMemAlloc -> cuMemAlloc_v2); SYMBOL()
// expands them so dlsym asks for what a program linked against these headers would.
#define GK_FUNCS(X)                                                                             \
	X(cuInit) X(cuGetErrorName) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute)     \
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent)                 \
	X(cuCtxSetCurrent) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)             \
	X(cuLaunchKernel) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuMemAlloc) \
	X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)   \
	X(cuMemcpyDtoDAsync) X(cuMemsetD32Async)

#define GK_STR(x) #x
#define SYMBOL(x) GK_STR(x)
#define GK_DECLARE(name) static PFN_##name gk_##name;
GK_FUNCS(GK_DECLARE)

int gk_load(const char *path, char *err, size_t errlen) {
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		snprintf(err, errlen, "%s", dlerror());
		return -1;
	}
#define GK_RESOLVE(name)                                                               \
	gk_##name = (PFN_##name)dlsym(lib, SYMBOL(name));                                  \
	if (gk_##name == NULL) {                                                           \
		snprintf(err, errlen, "%s: no symbol %s", path, SYMBOL(name));                 \
		return -1;                                                                     \
	}
	GK_FUNCS(GK_RESOLVE)
	return 0;
}

CUresult gk_enter(CUcontext ctx, CUcontext *prev) {
	CUresult r = gk_cuCtxGetCurrent(prev);
	if (r != CUDA_SUCCESS || *prev == ctx) return r;
	return gk_cuCtxSetCurrent(ctx);
}

void gk_leave(CUcontext ctx, CUcontext prev) {
	if (prev != ctx) gk_cuCtxSetCurrent(prev);
}

#define IN_CONTEXT(ctx, call)                         \
	CUcontext prev;                                   \
	CUresult r = gk_enter(ctx, &prev);                \
	if (r != CUDA_SUCCESS) return r;                  \
	r = (call);                                       \
	gk_leave(ctx, prev);                              \
	return r;

CUresult gk_init(void) { return gk_cuInit(0); }
CUresult gk_error_name(CUresult code, const char **name) { return gk_cuGetErrorName(code, name); }
CUresult gk_device_count(int *count) { return gk_cuDeviceGetCount(count); }

CUresult gk_device_info(int ordinal, char *name, int namelen, int *cc_major, int *cc_minor, int *sms) {
	CUdevice dev;
	CUresult r = gk_cuDeviceGet(&dev, ordinal);
	if (r == CUDA_SUCCESS) r = gk_cuDeviceGetName(name, namelen, dev);
	if (r == CUDA_SUCCESS) r = gk_cuDeviceGetAttribute(cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	if (r == CUDA_SUCCESS) r = gk_cuDeviceGetAttribute(cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	if (r == CUDA_SUCCESS) r = gk_cuDeviceGetAttribute(sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
	return r;
}

CUresult gk_primary_retain(int ordinal, CUcontext *ctx) {
	CUdevice dev;
	CUresult r = gk_cuDeviceGet(&dev, ordinal);
	if (r != CUDA_SUCCESS) return r;
	return gk_cuDevicePrimaryCtxRetain(ctx, dev);
}

CUresult gk_primary_release(int ordinal) {
	CUdevice dev;
	CUresult r = gk_cuDeviceGet(&dev, ordinal);
	if (r != CUDA_SUCCESS) return r;
	return gk_cuDevicePrimaryCtxRelease(dev);
}

static CUresult module_load(const void *image, uintptr_t *module) {
	CUmodule m = NULL;
	CUresult r = gk_cuModuleLoadData(&m, image);
	*module = (uintptr_t)m;
	return r;
}
CUresult gk_module_load(CUcontext ctx, const void *image, uintptr_t *module) {
	IN_CONTEXT(ctx, module_load(image, module));
}
CUresult gk_module_unload(CUcontext ctx, uintptr_t module) { IN_CONTEXT(ctx, gk_cuModuleUnload((CUmodule)module)); }

static CUresult module_function(uintptr_t module, const char *name, uintptr_t *fn) {
	CUfunction f = NULL;
	CUresult r = gk_cuModuleGetFunction(&f, (CUmodule)module, name);
	*fn = (uintptr_t)f;
	return r;
}
CUresult gk_module_function(CUcontext ctx, uintptr_t module, const char *name, uintptr_t *fn) {
	IN_CONTEXT(ctx, module_function(module, name, fn));
}

#define GK_MAX_ARGS 32
static CUresult launch(uintptr_t fn, unsigned gx, unsigned bx, unsigned shmem, uintptr_t stream, uint64_t *args,
                       int nargs) {
	void *params[GK_MAX_ARGS];
	if (nargs > GK_MAX_ARGS) return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < nargs; i++) params[i] = &args[i];
	return gk_cuLaunchKernel((CUfunction)fn, gx, 1, 1, bx, 1, 1, shmem, (CUstream)stream, params, NULL);
}
CUresult gk_launch(CUcontext ctx, uintptr_t fn, unsigned gx, unsigned bx, unsigned shmem, uintptr_t stream,
                   uint64_t *args, int nargs) {
	IN_CONTEXT(ctx, launch(fn, gx, bx, shmem, stream, args, nargs));
}

static CUresult stream_create(uintptr_t *stream) {
	CUstream s = NULL;
	CUresult r = gk_cuStreamCreate(&s, CU_STREAM_DEFAULT);
	*stream = (uintptr_t)s;
	return r;
}
CUresult gk_stream_create(CUcontext ctx, uintptr_t *stream) { IN_CONTEXT(ctx, stream_create(stream)); }
CUresult gk_stream_destroy(CUcontext ctx, uintptr_t stream) { IN_CONTEXT(ctx, gk_cuStreamDestroy((CUstream)stream)); }
CUresult gk_stream_synchronize(CUcontext ctx, uintptr_t stream) {
	IN_CONTEXT(ctx, gk_cuStreamSynchronize((CUstream)stream));
}

static CUresult mem_alloc(size_t size, uint64_t *addr) {
	CUdeviceptr p = 0;
	CUresult r = gk_cuMemAlloc(&p, size);
	*addr = (uint64_t)p;
	return r;
}
CUresult gk_mem_alloc(CUcontext ctx, size_t size, uint64_t *addr) { IN_CONTEXT(ctx, mem_alloc(size, addr)); }
CUresult gk_mem_free(CUcontext ctx, uint64_t addr) { IN_CONTEXT(ctx, gk_cuMemFree((CUdeviceptr)addr)); }
CUresult gk_mem_alloc_host(CUcontext ctx, size_t size, void **p) { IN_CONTEXT(ctx, gk_cuMemAllocHost(p, size)); }
CUresult gk_mem_free_host(CUcontext ctx, void *p) { IN_CONTEXT(ctx, gk_cuMemFreeHost(p)); }

CUresult gk_copy_htod_async(CUcontext ctx, uint64_t dst, const void *src, size_t n, uintptr_t stream) {
	IN_CONTEXT(ctx, gk_cuMemcpyHtoDAsync((CUdeviceptr)dst, src, n, (CUstream)stream));
}
CUresult gk_copy_dtoh_async(CUcontext ctx, void *dst, uint64_t src, size_t n, uintptr_t stream) {
	IN_CONTEXT(ctx, gk_cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, n, (CUstream)stream));
}
CUresult gk_copy_dtod_async(CUcontext ctx, uint64_t dst, uint64_t src, size_t n, uintptr_t stream) {
	IN_CONTEXT(ctx, gk_cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, (CUstream)stream));
}
CUresult gk_memset32_async(CUcontext ctx, uint64_t dst, unsigned value, size_t n, uintptr_t stream) {
	IN_CONTEXT(ctx, gk_cuMemsetD32Async((CUdeviceptr)dst, value, n, (CUstream)stream));
}
