// fakecuda.c: a stand-in for libcuda.so.1 over host memory, so that driver/cuda and everything
// above it can be tested where there is no GPU (CI: `make cuda-fake-test` builds it with the
// machine's C compiler and runs the GPU tests against it through GMLAKE_LIBCUDA). It needs no CUDA
// header: it declares the few types and values of cuda.h it uses, with cuda.h's layouts.
//
// It implements exactly the calls internal/libcuda loads, with the real driver's rules where they
// matter to the code under test: calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT
// unless the primary context is current on the calling thread; cuMemMap maps a handle only from
// offset 0 and only whole (CUDA_ERROR_NOT_SUPPORTED / INVALID_VALUE otherwise) and never over a
// mapped byte; mapped memory is inaccessible (PROT_NONE) until cuMemSetAccess, so a missing access
// call faults; physical memory is shared between all the ranges that map it (a memfd), so
// stitching is real. Structs passed by pointer are checked field by field, so a caller with the
// wrong layout gets CUDA_ERROR_INVALID_VALUE. Work is synchronous: every event is complete when
// recorded. It cannot run kernels: module loading and launches return CUDA_ERROR_NOT_SUPPORTED.
// Device memory is the capacity in $GMLAKE_FAKE_CUDA_BYTES (default 4 GiB); granularity 2 MiB.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// ---- cuda.h, as much of it as this file needs.
typedef enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_SUPPORTED = 801,
} CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef enum { CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102 } CUdevice_attribute;
typedef enum { CU_MEM_ALLOCATION_TYPE_PINNED = 1 } CUmemAllocationType;
typedef enum { CU_MEM_LOCATION_TYPE_DEVICE = 1 } CUmemLocationType;
typedef enum { CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3 } CUmemAccess_flags;
typedef enum { CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1 } CUmemAllocationGranularity_flags;
typedef struct { CUmemLocationType type; int id; } CUmemLocation;
typedef struct {
	CUmemAllocationType type;
	int requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;
typedef struct { CUmemLocation location; CUmemAccess_flags flags; } CUmemAccessDesc;
_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes in cuda.h");
_Static_assert(offsetof(CUmemAllocationProp, allocFlags) == 24, "allocFlags at 24 in cuda.h");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc is 12 bytes in cuda.h");

#define GRANULARITY (2u << 20)
#define MAX_HANDLES 65536
#define MAX_MAPPINGS 65536

struct CUctx_st { int unused; };
struct CUevent_st { int unused; };
struct CUstream_st { int unused; };

static struct CUctx_st primary;
static int primary_refs;
static __thread CUcontext current;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialised, memfd = -1;
static size_t capacity, used;
static off_t file_end;

struct handle { off_t off; size_t size; int mappings; int live; };
static struct handle handles[MAX_HANDLES + 1]; // index = handle value; 0 unused
static unsigned long long next_handle = 1;

struct mapping { uintptr_t addr; size_t size; unsigned long long h; };
static struct mapping mappings[MAX_MAPPINGS];
static int nmappings;

#define NEED_CONTEXT() do { if (current != &primary) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

CUresult cuInit(unsigned int flags) {
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (!initialised) {
		const char *cap = getenv("GMLAKE_FAKE_CUDA_BYTES");
		capacity = cap ? strtoull(cap, NULL, 10) : (4ull << 30);
		memfd = memfd_create("fakecuda", 0);
		initialised = memfd >= 0;
	}
	pthread_mutex_unlock(&mu);
	return initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuDriverGetVersion(int *v) { *v = 11080; return CUDA_SUCCESS; }

CUresult cuGetErrorName(CUresult e, const char **s) {
	switch (e) {
	case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; return CUDA_SUCCESS;
	case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
	case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
	case CUDA_ERROR_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; return CUDA_SUCCESS;
	case CUDA_ERROR_NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
	default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult cuDeviceGetCount(int *n) { *n = initialised; return initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
	*d = 0;
	return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "gmlake fake CUDA device");
	return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	*bytes = capacity;
	return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	*v = a == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
	return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	primary_refs++;
	pthread_mutex_unlock(&mu);
	*c = &primary;
	return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	CUresult r = primary_refs > 0 ? (primary_refs--, CUDA_SUCCESS) : CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) {
	if (c != NULL && c != &primary) return CUDA_ERROR_INVALID_CONTEXT;
	current = c;
	return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize(void) { NEED_CONTEXT(); return CUDA_SUCCESS; }

CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags f) {
	NEED_CONTEXT();
	if (f != CU_MEM_ALLOC_GRANULARITY_MINIMUM && f != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) return CUDA_ERROR_INVALID_VALUE;
	if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
	*g = GRANULARITY;
	return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
	NEED_CONTEXT();
	pthread_mutex_lock(&mu);
	*free_bytes = capacity - used;
	*total = capacity;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop, unsigned long long flags) {
	NEED_CONTEXT();
	if (size == 0 || size % GRANULARITY != 0 || flags != 0 || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->requestedHandleTypes != 0 || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    prop->location.id != 0 || prop->win32HandleMetaData != NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult r = CUDA_SUCCESS;
	if (used + size > capacity) r = CUDA_ERROR_OUT_OF_MEMORY;
	else if (next_handle > MAX_HANDLES) r = CUDA_ERROR_OUT_OF_MEMORY;
	else if (ftruncate(memfd, file_end + (off_t)size) != 0) r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS) {
		handles[next_handle] = (struct handle){.off = file_end, .size = size, .live = 1};
		*h = next_handle++;
		file_end += (off_t)size;
		used += size;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

// drop gives a released handle's memory back once nothing maps it. Called with mu held.
static void drop(unsigned long long h) {
	struct handle *p = &handles[h];
	if (p->live || p->mappings > 0 || p->size == 0) return;
	fallocate(memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, p->off, (off_t)p->size);
	used -= p->size;
	p->size = 0;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
	NEED_CONTEXT();
	pthread_mutex_lock(&mu);
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	if (h > 0 && h < next_handle && handles[h].live) {
		handles[h].live = 0;
		drop(h);
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags) {
	NEED_CONTEXT();
	if (size == 0 || size % GRANULARITY != 0 || addr != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
	if (align < GRANULARITY) align = GRANULARITY;
	void *p = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t base = ((uintptr_t)p + align - 1) / align * align;
	if (base > (uintptr_t)p) munmap(p, base - (uintptr_t)p);
	uintptr_t end = (uintptr_t)p + size + align;
	if (end > base + size) munmap((void *)(base + size), end - (base + size));
	*ptr = (CUdeviceptr)base;
	return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
	NEED_CONTEXT();
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nmappings; i++) {
		if (mappings[i].addr < ptr + size && ptr < mappings[i].addr + mappings[i].size) {
			pthread_mutex_unlock(&mu);
			return CUDA_ERROR_INVALID_VALUE; // still mapped
		}
	}
	pthread_mutex_unlock(&mu);
	return munmap((void *)ptr, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags) {
	NEED_CONTEXT();
	if (offset != 0) return CUDA_ERROR_NOT_SUPPORTED; // as the real driver (CUDA 13.0)
	if (flags != 0 || ptr % GRANULARITY != 0) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult r = CUDA_SUCCESS;
	if (h == 0 || h >= next_handle || !handles[h].live || handles[h].size != size || nmappings == MAX_MAPPINGS)
		r = CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; r == CUDA_SUCCESS && i < nmappings; i++)
		if (mappings[i].addr < ptr + size && ptr < mappings[i].addr + mappings[i].size) r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS &&
	    mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, memfd, handles[h].off) == MAP_FAILED)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		mappings[nmappings++] = (struct mapping){.addr = ptr, .size = size, .h = h};
		handles[h].mappings++;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
	NEED_CONTEXT();
	pthread_mutex_lock(&mu);
	CUresult r = CUDA_SUCCESS;
	size_t covered = 0;
	for (int i = 0; i < nmappings; i++) {
		struct mapping *m = &mappings[i];
		if (m->addr >= ptr + size || ptr >= m->addr + m->size) continue;
		if (m->addr < ptr || m->addr + m->size > ptr + size) r = CUDA_ERROR_INVALID_VALUE; // part of a mapping
		covered += m->size;
	}
	if (covered != size) r = CUDA_ERROR_INVALID_VALUE; // holes: not one mapped range
	if (r == CUDA_SUCCESS) {
		mmap((void *)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
		for (int i = 0; i < nmappings;) {
			struct mapping *m = &mappings[i];
			if (m->addr >= ptr && m->addr + m->size <= ptr + size) {
				unsigned long long h = m->h;
				handles[h].mappings--;
				*m = mappings[--nmappings];
				drop(h);
			} else {
				i++;
			}
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
	NEED_CONTEXT();
	if (count != 1 || desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc->location.id != 0 ||
	    desc->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	size_t covered = 0;
	for (int i = 0; i < nmappings; i++) {
		struct mapping *m = &mappings[i];
		if (m->addr >= ptr && m->addr + m->size <= ptr + size) covered += m->size;
	}
	pthread_mutex_unlock(&mu);
	if (covered != size) return CUDA_ERROR_INVALID_VALUE; // every byte must be mapped
	return mprotect((void *)ptr, size, PROT_READ | PROT_WRITE) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Plain allocations: anonymous memory, counted against the capacity; the size is kept before it.
CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t size) {
	NEED_CONTEXT();
	if (size == 0) return CUDA_ERROR_INVALID_VALUE;
	size_t total = (size + 4095) / 4096 * 4096 + 4096;
	pthread_mutex_lock(&mu);
	int fits = used + total <= capacity;
	if (fits) used += total;
	pthread_mutex_unlock(&mu);
	if (!fits) return CUDA_ERROR_OUT_OF_MEMORY;
	char *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
	*(size_t *)p = total;
	*ptr = (CUdeviceptr)(p + 4096);
	return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
	NEED_CONTEXT();
	char *p = (char *)ptr - 4096;
	size_t total = *(size_t *)p;
	munmap(p, total);
	pthread_mutex_lock(&mu);
	used -= total;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { NEED_CONTEXT(); memcpy((void *)dst, src, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { NEED_CONTEXT(); memcpy(dst, (void *)src, n); return CUDA_SUCCESS; }
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
	(void)s;
	NEED_CONTEXT();
	memset((void *)dst, v, n);
	return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags) {
	(void)flags;
	NEED_CONTEXT();
	*e = calloc(1, sizeof(struct CUevent_st));
	return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuEventRecord(CUevent e, CUstream s) { (void)s; NEED_CONTEXT(); return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
CUresult cuEventQuery(CUevent e) { NEED_CONTEXT(); return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
CUresult cuEventDestroy_v2(CUevent e) { NEED_CONTEXT(); free(e); return CUDA_SUCCESS; }

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
	(void)flags;
	NEED_CONTEXT();
	*s = calloc(1, sizeof(struct CUstream_st));
	return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuStreamDestroy_v2(CUstream s) { NEED_CONTEXT(); free(s); return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(CUstream s) { (void)s; NEED_CONTEXT(); return CUDA_SUCCESS; }

// Pinned host memory and asynchronous copies: plain memory and synchronous copies.
CUresult cuMemAllocHost_v2(void **p, size_t size) {
	NEED_CONTEXT();
	*p = calloc(1, size ? size : 1);
	return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) { NEED_CONTEXT(); free(p); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
	(void)s;
	NEED_CONTEXT();
	memcpy((void *)dst, src, n);
	return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
	(void)s;
	NEED_CONTEXT();
	memcpy(dst, (void *)src, n);
	return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	(void)s;
	NEED_CONTEXT();
	memmove((void *)dst, (void *)src, n);
	return CUDA_SUCCESS;
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
	(void)s;
	NEED_CONTEXT();
	for (size_t i = 0; i < n; i++) ((unsigned int *)dst)[i] = v;
	return CUDA_SUCCESS;
}

// No kernels run here.
CUresult cuModuleLoadData(CUmodule *m, const void *image) { (void)m; (void)image; NEED_CONTEXT(); return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuModuleUnload(CUmodule m) { (void)m; NEED_CONTEXT(); return CUDA_ERROR_INVALID_HANDLE; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
	(void)f; (void)m; (void)name;
	NEED_CONTEXT();
	return CUDA_ERROR_INVALID_HANDLE;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, CUstream s, void **params, void **extra) {
	(void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shmem; (void)s; (void)params; (void)extra;
	NEED_CONTEXT();
	return CUDA_ERROR_NOT_SUPPORTED;
}
