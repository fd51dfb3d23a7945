package libcuda

import "structs"

// The structs and enum values of cuda.h that this module passes to the driver. The structs are
// laid out as C lays them out (layout_test.go checks every size and offset against cuda.h's).

// MemLocation is CUmemLocation: where memory lives (8 bytes).
type MemLocation struct {
	_    structs.HostLayout
	Type int32 // CUmemLocationType
	ID   int32 // the device ordinal, for LocationDevice
}

// MemAllocFlags is the allocFlags member of CUmemAllocationProp (8 bytes).
type MemAllocFlags struct {
	_                    structs.HostLayout
	CompressionType      uint8
	GPUDirectRDMACapable uint8
	Usage                uint16
	Reserved             [4]uint8
}

// MemAllocationProp is CUmemAllocationProp, what cuMemCreate allocates (32 bytes).
type MemAllocationProp struct {
	_                    structs.HostLayout
	Type                 int32 // CUmemAllocationType
	RequestedHandleTypes int32 // CUmemAllocationHandleType
	Location             MemLocation
	Win32HandleMetaData  uintptr // void *
	AllocFlags           MemAllocFlags
}

// MemAccessDesc is CUmemAccessDesc: who may access a mapped range, and how (12 bytes).
type MemAccessDesc struct {
	_        structs.HostLayout
	Location MemLocation
	Flags    int32 // CUmemAccess_flags
}

// Enum values of cuda.h.
const (
	MemAllocationTypePinned = 1 // CU_MEM_ALLOCATION_TYPE_PINNED
	MemLocationTypeDevice   = 1 // CU_MEM_LOCATION_TYPE_DEVICE
	MemAccessProtReadWrite  = 3 // CU_MEM_ACCESS_FLAGS_PROT_READWRITE

	GranularityMinimum     = 0 // CU_MEM_ALLOC_GRANULARITY_MINIMUM
	GranularityRecommended = 1 // CU_MEM_ALLOC_GRANULARITY_RECOMMENDED

	EventDisableTiming = 2 // CU_EVENT_DISABLE_TIMING
	StreamDefault      = 0 // CU_STREAM_DEFAULT
	StreamNonBlocking  = 1 // CU_STREAM_NON_BLOCKING
)

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int32

// The device attributes this module reads.
const (
	AttrMultiprocessorCount     DeviceAttribute = 16  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	AttrComputeCapabilityMajor  DeviceAttribute = 75  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapabilityMinor  DeviceAttribute = 76  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	AttrVirtualMemoryManagement DeviceAttribute = 102 // CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
)

// PinnedOn is the allocation property of pinned device memory on device ordinal.
func PinnedOn(ordinal int) MemAllocationProp {
	return MemAllocationProp{Type: MemAllocationTypePinned, Location: MemLocation{Type: MemLocationTypeDevice, ID: int32(ordinal)}}
}

// ReadWriteOn is the access descriptor for reading and writing from device ordinal.
func ReadWriteOn(ordinal int) MemAccessDesc {
	return MemAccessDesc{Location: MemLocation{Type: MemLocationTypeDevice, ID: int32(ordinal)}, Flags: MemAccessProtReadWrite}
}
