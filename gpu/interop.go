package gpu

// Do runs fn on a locked OS thread with the Device's context current, for calls into CUDA
// libraries of other packages (cuDNN) on the Device's memory and stream.
func (d *Device) Do(fn func() error) error {
	if d.closed {
		return ErrClosed
	}
	return d.withContext(fn)
}

// StreamHandle is the Device's CUstream, for libraries (cuDNN) that queue on it.
func (d *Device) StreamHandle() uintptr { return d.stream }
