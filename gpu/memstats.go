package gpu

// MemoryStats counts the Device's requests to its allocator (tensors, ids, scratch).
type MemoryStats struct {
	Allocs, Frees uint64
	LiveBytes     uint64 // requested and not yet freed
	PeakLiveBytes uint64
}

// MemoryStats returns the counts so far.
func (d *Device) MemoryStats() MemoryStats { return d.mem }

// ResetPeak sets PeakLiveBytes to the current LiveBytes, to measure one phase.
func (d *Device) ResetPeak() { d.mem.PeakLiveBytes = d.mem.LiveBytes }

func (d *Device) allocate(bytes uint64) (uintptr, error) {
	ptr, err := d.alloc.Alloc(bytes, d.Stream())
	if err != nil {
		return 0, err
	}
	d.mem.Allocs++
	d.mem.LiveBytes += bytes
	d.mem.PeakLiveBytes = max(d.mem.PeakLiveBytes, d.mem.LiveBytes)
	return ptr, nil
}

func (d *Device) release(ptr uintptr, bytes uint64) error {
	if err := d.alloc.Free(ptr, bytes); err != nil {
		return err
	}
	d.mem.Frees++
	d.mem.LiveBytes -= bytes
	return nil
}
