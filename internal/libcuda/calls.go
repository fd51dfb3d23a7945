package libcuda

import "unsafe"

// The driver calls, one Go function per C function (Init must have succeeded). Those that need a
// context use the calling thread's current one: call them between Enter and Leave, or inside In.
// Out-parameters become results; sizes are size_t (uintptr), device addresses CUdeviceptr
// (uint64).

// DriverGetVersion is cuDriverGetVersion: 1000*major + 10*minor.
func DriverGetVersion() (int, Result) {
	var v int32
	r := call(fn.driverGetVersion, uintptr(unsafe.Pointer(&v)))
	return int(v), r
}

// DeviceGetCount is cuDeviceGetCount.
func DeviceGetCount() (int, Result) {
	var n int32
	r := call(fn.deviceGetCount, uintptr(unsafe.Pointer(&n)))
	return int(n), r
}

// DeviceGet is cuDeviceGet: the CUdevice of an ordinal.
func DeviceGet(ordinal int) (int32, Result) {
	var d int32
	r := call(fn.deviceGet, uintptr(unsafe.Pointer(&d)), uintptr(ordinal))
	return d, r
}

// DeviceGetName is cuDeviceGetName.
func DeviceGetName(dev int32) (string, Result) {
	buf := make([]byte, 256)
	r := call(fn.deviceGetName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(dev))
	if r != Success {
		return "", r
	}
	n := 0
	for n < len(buf) && buf[n] != 0 {
		n++
	}
	return string(buf[:n]), r
}

// DeviceTotalMem is cuDeviceTotalMem_v2.
func DeviceTotalMem(dev int32) (uint64, Result) {
	var n uintptr
	r := call(fn.deviceTotalMem, uintptr(unsafe.Pointer(&n)), uintptr(dev))
	return uint64(n), r
}

// DeviceGetAttribute is cuDeviceGetAttribute.
func DeviceGetAttribute(a DeviceAttribute, dev int32) (int, Result) {
	var v int32
	r := call(fn.deviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(dev))
	return int(v), r
}

// PrimaryCtxRetain is cuDevicePrimaryCtxRetain of device ordinal.
func PrimaryCtxRetain(ordinal int) (Context, Result) {
	dev, r := DeviceGet(ordinal)
	if r != Success {
		return 0, r
	}
	var c Context
	r = call(fn.primaryCtxRetain, uintptr(unsafe.Pointer(&c)), uintptr(dev))
	return c, r
}

// PrimaryCtxRelease is cuDevicePrimaryCtxRelease_v2 of device ordinal.
func PrimaryCtxRelease(ordinal int) Result {
	dev, r := DeviceGet(ordinal)
	if r != Success {
		return r
	}
	return call(fn.primaryCtxRelease, uintptr(dev))
}

// CtxSynchronize is cuCtxSynchronize.
func CtxSynchronize() Result { return call(fn.ctxSynchronize) }

// MemGetAllocationGranularity is cuMemGetAllocationGranularity (GranularityMinimum or
// GranularityRecommended).
func MemGetAllocationGranularity(prop *MemAllocationProp, which int) (uint64, Result) {
	var g uintptr
	r := call(fn.memGetAllocationGranularity, uintptr(unsafe.Pointer(&g)), uintptr(unsafe.Pointer(prop)), uintptr(which))
	return uint64(g), r
}

// MemCreate is cuMemCreate: a physical allocation of size bytes.
func MemCreate(size uint64, prop *MemAllocationProp) (uint64, Result) {
	var h uint64
	r := call(fn.memCreate, uintptr(unsafe.Pointer(&h)), uintptr(size), uintptr(unsafe.Pointer(prop)), 0)
	return h, r
}

// MemRelease is cuMemRelease.
func MemRelease(h uint64) Result { return call(fn.memRelease, uintptr(h)) }

// MemAddressReserve is cuMemAddressReserve of size bytes aligned to align, anywhere.
func MemAddressReserve(size, align uint64) (uint64, Result) {
	var p uint64
	r := call(fn.memAddressReserve, uintptr(unsafe.Pointer(&p)), uintptr(size), uintptr(align), 0, 0)
	return p, r
}

// MemAddressFree is cuMemAddressFree.
func MemAddressFree(p, size uint64) Result { return call(fn.memAddressFree, uintptr(p), uintptr(size)) }

// MemMap is cuMemMap of size bytes of h, from its offset, at p.
func MemMap(p, size, offset, h uint64) Result {
	return call(fn.memMap, uintptr(p), uintptr(size), uintptr(offset), uintptr(h), 0)
}

// MemUnmap is cuMemUnmap.
func MemUnmap(p, size uint64) Result { return call(fn.memUnmap, uintptr(p), uintptr(size)) }

// MemSetAccess is cuMemSetAccess with one descriptor.
func MemSetAccess(p, size uint64, desc *MemAccessDesc) Result {
	return call(fn.memSetAccess, uintptr(p), uintptr(size), uintptr(unsafe.Pointer(desc)), 1)
}

// EventCreate is cuEventCreate.
func EventCreate(flags uint32) (uintptr, Result) {
	var e uintptr
	r := call(fn.eventCreate, uintptr(unsafe.Pointer(&e)), uintptr(flags))
	return e, r
}

// EventRecord is cuEventRecord.
func EventRecord(event, stream uintptr) Result { return call(fn.eventRecord, event, stream) }

// EventQuery is cuEventQuery: Success when done, NotReady while work before it is queued.
func EventQuery(event uintptr) Result { return call(fn.eventQuery, event) }

// EventDestroy is cuEventDestroy_v2.
func EventDestroy(event uintptr) Result { return call(fn.eventDestroy, event) }

// MemGetInfo is cuMemGetInfo_v2.
func MemGetInfo() (free, total uint64, r Result) {
	var f, t uintptr
	r = call(fn.memGetInfo, uintptr(unsafe.Pointer(&f)), uintptr(unsafe.Pointer(&t)))
	return uint64(f), uint64(t), r
}

// MemAlloc is cuMemAlloc_v2.
func MemAlloc(size uint64) (uint64, Result) {
	var p uint64
	r := call(fn.memAlloc, uintptr(unsafe.Pointer(&p)), uintptr(size))
	return p, r
}

// MemFree is cuMemFree_v2.
func MemFree(p uint64) Result { return call(fn.memFree, uintptr(p)) }

// MemAllocHost is cuMemAllocHost_v2: page-locked host memory, as an address.
func MemAllocHost(size uint64) (uintptr, Result) {
	var p uintptr
	r := call(fn.memAllocHost, uintptr(unsafe.Pointer(&p)), uintptr(size))
	return p, r
}

// MemFreeHost is cuMemFreeHost.
func MemFreeHost(p uintptr) Result { return call(fn.memFreeHost, p) }

// MemcpyHtoD is cuMemcpyHtoD_v2 of n bytes from host address src.
func MemcpyHtoD(dst uint64, src unsafe.Pointer, n uint64) Result {
	return call(fn.memcpyHtoD, uintptr(dst), uintptr(src), uintptr(n))
}

// MemcpyDtoH is cuMemcpyDtoH_v2 of n bytes to host address dst.
func MemcpyDtoH(dst unsafe.Pointer, src uint64, n uint64) Result {
	return call(fn.memcpyDtoH, uintptr(dst), uintptr(src), uintptr(n))
}

// MemcpyHtoDAsync is cuMemcpyHtoDAsync_v2. src must stay valid until the copy is done.
func MemcpyHtoDAsync(dst uint64, src uintptr, n uint64, stream uintptr) Result {
	return call(fn.memcpyHtoDAsync, uintptr(dst), src, uintptr(n), stream)
}

// MemcpyDtoHAsync is cuMemcpyDtoHAsync_v2. dst must stay valid until the copy is done.
func MemcpyDtoHAsync(dst uintptr, src uint64, n uint64, stream uintptr) Result {
	return call(fn.memcpyDtoHAsync, dst, uintptr(src), uintptr(n), stream)
}

// MemcpyDtoDAsync is cuMemcpyDtoDAsync_v2.
func MemcpyDtoDAsync(dst, src, n uint64, stream uintptr) Result {
	return call(fn.memcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(n), stream)
}

// MemsetD8Async is cuMemsetD8Async: n bytes set to value.
func MemsetD8Async(dst uint64, value uint8, n uint64, stream uintptr) Result {
	return call(fn.memsetD8Async, uintptr(dst), uintptr(value), uintptr(n), stream)
}

// MemsetD32Async is cuMemsetD32Async: n 32-bit words set to value.
func MemsetD32Async(dst uint64, value uint32, n uint64, stream uintptr) Result {
	return call(fn.memsetD32Async, uintptr(dst), uintptr(value), uintptr(n), stream)
}

// StreamCreate is cuStreamCreate (StreamDefault or StreamNonBlocking).
func StreamCreate(flags uint32) (uintptr, Result) {
	var s uintptr
	r := call(fn.streamCreate, uintptr(unsafe.Pointer(&s)), uintptr(flags))
	return s, r
}

// StreamDestroy is cuStreamDestroy_v2.
func StreamDestroy(s uintptr) Result { return call(fn.streamDestroy, s) }

// StreamSynchronize is cuStreamSynchronize.
func StreamSynchronize(s uintptr) Result { return call(fn.streamSynchronize, s) }

// ModuleLoadData is cuModuleLoadData of a NUL-terminated PTX (or cubin) image; the driver has
// copied what it needs when it returns.
func ModuleLoadData(image []byte) (uintptr, Result) {
	if len(image) == 0 {
		return 0, InvalidValue
	}
	var m uintptr
	r := call(fn.moduleLoadData, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&image[0])))
	return m, r
}

// ModuleUnload is cuModuleUnload.
func ModuleUnload(m uintptr) Result { return call(fn.moduleUnload, m) }

// ModuleGetFunction is cuModuleGetFunction.
func ModuleGetFunction(m uintptr, name string) (uintptr, Result) {
	cname := make([]byte, len(name)+1)
	copy(cname, name)
	var f uintptr
	r := call(fn.moduleGetFunction, uintptr(unsafe.Pointer(&f)), m, uintptr(unsafe.Pointer(&cname[0])))
	return f, r
}

// MaxKernelArgs bounds the parameters LaunchKernel passes.
const MaxKernelArgs = 32

// KernelArgs holds a launch's parameters: each one the low bytes of a 64-bit slot (pointers and
// long long take 8, int and float 4, little-endian), and the array of their addresses that
// cuLaunchKernel reads. Allocate it with new: the addresses point into it.
type KernelArgs struct {
	Slots  [MaxKernelArgs]uint64
	params [MaxKernelArgs]uintptr
}

// LaunchKernel is cuLaunchKernel of f on a one-dimensional grid and block with the first n
// parameters of args.
func LaunchKernel(f uintptr, grid, block, sharedMem uint32, stream uintptr, args *KernelArgs, n int) Result {
	if n < 0 || n > MaxKernelArgs {
		return InvalidValue
	}
	for i := range n {
		args.params[i] = uintptr(unsafe.Pointer(&args.Slots[i]))
	}
	return call(fn.launchKernel, f, uintptr(grid), 1, 1, uintptr(block), 1, 1, uintptr(sharedMem), stream,
		uintptr(unsafe.Pointer(&args.params[0])), 0)
}
