//go:build cuda || gmlakegpu

// libcuda.h: the CUDA driver calls package gpu makes (modules, launches, streams, copies, pinned
// host memory), from the driver library opened at run time with dlopen, as driver/cuda does for the
// VMM calls. Names carry the gk_ prefix so that both packages link into one binary. Every call that
// needs a context takes it, makes it current on the calling OS thread and restores the previous one.
#ifndef GMLAKE_GPU_LIBCUDA_H
#define GMLAKE_GPU_LIBCUDA_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>

int gk_load(const char *path, char *err, size_t errlen);
CUresult gk_init(void);
CUresult gk_error_name(CUresult code, const char **name);
CUresult gk_device_count(int *count);
CUresult gk_device_info(int ordinal, char *name, int namelen, int *cc_major, int *cc_minor, int *sms);
CUresult gk_primary_retain(int ordinal, CUcontext *ctx);
CUresult gk_primary_release(int ordinal);

// gk_enter makes ctx current on this thread (for calls into other CUDA libraries such as cuBLAS);
// gk_leave restores prev. Both run on the thread the caller has locked.
CUresult gk_enter(CUcontext ctx, CUcontext *prev);
void gk_leave(CUcontext ctx, CUcontext prev);

CUresult gk_module_load(CUcontext ctx, const void *image, uintptr_t *module);
CUresult gk_module_unload(CUcontext ctx, uintptr_t module);
CUresult gk_module_function(CUcontext ctx, uintptr_t module, const char *name, uintptr_t *fn);
// gk_launch launches fn with nargs kernel arguments, each given as the low bytes of a uint64 slot
// (pointers and long long take 8, int and float 4, little-endian).
CUresult gk_launch(CUcontext ctx, uintptr_t fn, unsigned gx, unsigned bx, unsigned shmem, uintptr_t stream,
                   uint64_t *args, int nargs);

CUresult gk_stream_create(CUcontext ctx, uintptr_t *stream);
CUresult gk_stream_destroy(CUcontext ctx, uintptr_t stream);
CUresult gk_stream_synchronize(CUcontext ctx, uintptr_t stream);

CUresult gk_mem_alloc(CUcontext ctx, size_t size, uint64_t *addr);
CUresult gk_mem_free(CUcontext ctx, uint64_t addr);
CUresult gk_mem_alloc_host(CUcontext ctx, size_t size, void **p);
CUresult gk_mem_free_host(CUcontext ctx, void *p);
CUresult gk_copy_htod_async(CUcontext ctx, uint64_t dst, const void *src, size_t n, uintptr_t stream);
CUresult gk_copy_dtoh_async(CUcontext ctx, void *dst, uint64_t src, size_t n, uintptr_t stream);
CUresult gk_copy_dtod_async(CUcontext ctx, uint64_t dst, uint64_t src, size_t n, uintptr_t stream);
CUresult gk_memset32_async(CUcontext ctx, uint64_t dst, unsigned value, size_t n, uintptr_t stream);

#endif
