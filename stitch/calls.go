package stitch

// counted wraps a Driver and counts every call by kind.
type counted struct {
	d     Driver
	calls [NumCallKinds]uint64
}

func (c *counted) create(size uint64) (PhysHandle, error) {
	c.calls[CallCreate]++
	return c.d.Create(size)
}

func (c *counted) release(h PhysHandle) error {
	c.calls[CallRelease]++
	return c.d.Release(h)
}

func (c *counted) reserve(size uint64) (uintptr, error) {
	c.calls[CallReserve]++
	return c.d.Reserve(size)
}

func (c *counted) free(addr uintptr, size uint64) error {
	c.calls[CallFree]++
	return c.d.Free(addr, size)
}

func (c *counted) mapRange(addr uintptr, size uint64, h PhysHandle, off uint64) error {
	c.calls[CallMap]++
	return c.d.Map(addr, size, h, off)
}

func (c *counted) unmap(addr uintptr, size uint64) error {
	c.calls[CallUnmap]++
	return c.d.Unmap(addr, size)
}

func (c *counted) setAccess(addr uintptr, size uint64) error {
	c.calls[CallSetAccess]++
	return c.d.SetAccess(addr, size)
}

func (c *counted) recordEvent(s Stream) (Event, error) {
	c.calls[CallRecordEvent]++
	return c.d.RecordEvent(s)
}

func (c *counted) eventDone(ev Event) (bool, error) {
	c.calls[CallEventDone]++
	return c.d.EventDone(ev)
}

func (c *counted) destroyEvent(ev Event) error {
	c.calls[CallDestroyEvent]++
	return c.d.DestroyEvent(ev)
}

func (c *counted) synchronize() error {
	c.calls[CallSynchronize]++
	return c.d.Synchronize()
}

func (c *counted) memInfo() (free, total uint64, err error) {
	c.calls[CallMemInfo]++
	return c.d.MemInfo()
}
