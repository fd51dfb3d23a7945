package libcuda

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// The structs passed to the driver by pointer must have cuda.h's layout exactly: a field at the
// wrong offset would be read as another field with no error from the driver.
func TestStructLayouts(t *testing.T) {
	var loc MemLocation
	assert.Equal(t, uintptr(8), unsafe.Sizeof(loc), "CUmemLocation")
	assert.Equal(t, uintptr(4), unsafe.Offsetof(loc.ID))

	var flags MemAllocFlags
	assert.Equal(t, uintptr(8), unsafe.Sizeof(flags), "CUmemAllocationProp.allocFlags")
	assert.Equal(t, uintptr(1), unsafe.Offsetof(flags.GPUDirectRDMACapable))
	assert.Equal(t, uintptr(2), unsafe.Offsetof(flags.Usage))
	assert.Equal(t, uintptr(4), unsafe.Offsetof(flags.Reserved))

	var prop MemAllocationProp
	assert.Equal(t, uintptr(32), unsafe.Sizeof(prop), "CUmemAllocationProp")
	assert.Equal(t, uintptr(0), unsafe.Offsetof(prop.Type))
	assert.Equal(t, uintptr(4), unsafe.Offsetof(prop.RequestedHandleTypes))
	assert.Equal(t, uintptr(8), unsafe.Offsetof(prop.Location))
	assert.Equal(t, uintptr(16), unsafe.Offsetof(prop.Win32HandleMetaData))
	assert.Equal(t, uintptr(24), unsafe.Offsetof(prop.AllocFlags))

	var access MemAccessDesc
	assert.Equal(t, uintptr(12), unsafe.Sizeof(access), "CUmemAccessDesc")
	assert.Equal(t, uintptr(0), unsafe.Offsetof(access.Location))
	assert.Equal(t, uintptr(8), unsafe.Offsetof(access.Flags))
}

func TestPropertyValues(t *testing.T) {
	p := PinnedOn(3)
	assert.Equal(t, int32(1), p.Type)
	assert.Equal(t, MemLocation{Type: 1, ID: 3}, p.Location)
	assert.Zero(t, p.RequestedHandleTypes)
	a := ReadWriteOn(3)
	assert.Equal(t, MemLocation{Type: 1, ID: 3}, a.Location)
	assert.Equal(t, int32(3), a.Flags)
}
