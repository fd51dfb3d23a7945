//go:build cuda || gmlakegpu

// libcuda.h: the CUDA driver API as this package uses it, loaded at run time with dlopen (see
// doc.go). Every call that needs a context takes it explicitly; the wrapper makes it current on the
// calling OS thread for the duration of the call and restores what was current before.
#ifndef GMLAKE_LIBCUDA_H
#define GMLAKE_LIBCUDA_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>

// gm_load opens the driver library at path and resolves every function this package calls.
// It returns 0, or -1 with a message in err.
int gm_load(const char *path, char *err, size_t errlen);

CUresult gm_init(void);
CUresult gm_driver_version(int *version);
CUresult gm_error_name(CUresult code, const char **name);
CUresult gm_device_count(int *count);
CUresult gm_device_info(int ordinal, char *name, int namelen, size_t *total, int *vmm);
CUresult gm_primary_retain(int ordinal, CUcontext *ctx);
CUresult gm_primary_release(int ordinal);
CUresult gm_granularity(CUcontext ctx, int ordinal, int recommended, size_t *gran);

// Physical memory is handled in chunks of one granularity each (cuMemMap maps a handle only from
// offset 0). The *_chunks calls loop in C so that n chunks cost one cgo call; each undoes its own
// partial work on failure and returns the first error.
CUresult gm_create_chunks(CUcontext ctx, int ordinal, size_t chunk, uint64_t *handles, size_t n);
CUresult gm_release_chunks(CUcontext ctx, const uint64_t *handles, size_t n);
CUresult gm_map_chunks(CUcontext ctx, uint64_t addr, size_t chunk, const uint64_t *handles, size_t n);
CUresult gm_unmap_chunks(CUcontext ctx, uint64_t addr, size_t chunk, size_t n, int sync_first);
CUresult gm_address_reserve(CUcontext ctx, size_t size, size_t align, uint64_t *addr);
CUresult gm_address_free(CUcontext ctx, uint64_t addr, size_t size);
CUresult gm_set_access(CUcontext ctx, int ordinal, uint64_t addr, size_t size);

CUresult gm_event_record(CUcontext ctx, uintptr_t reuse, uintptr_t stream, uintptr_t *event);
CUresult gm_event_query(CUcontext ctx, uintptr_t event);
CUresult gm_event_destroy(CUcontext ctx, uintptr_t event);
CUresult gm_ctx_synchronize(CUcontext ctx);
CUresult gm_mem_info(CUcontext ctx, size_t *free_bytes, size_t *total_bytes);

CUresult gm_mem_alloc(CUcontext ctx, size_t size, uint64_t *addr);
CUresult gm_mem_free(CUcontext ctx, uint64_t addr);
CUresult gm_copy_htod(CUcontext ctx, uint64_t dst, const void *src, size_t n);
CUresult gm_copy_dtoh(CUcontext ctx, void *dst, uint64_t src, size_t n);
CUresult gm_memset_async(CUcontext ctx, uint64_t dst, unsigned char value, size_t n, uintptr_t stream);
CUresult gm_stream_create(CUcontext ctx, uintptr_t *stream);
CUresult gm_stream_destroy(CUcontext ctx, uintptr_t stream);
CUresult gm_stream_synchronize(CUcontext ctx, uintptr_t stream);

#endif
