package memory

import "errors"

// ErrNotHostAccessible: NewTensorEngine was given an Allocator whose driver's memory Go code cannot read
// (the simulated driver has none; CUDA device memory is not host memory).
var ErrNotHostAccessible = errors.New("memory: the driver's memory is not host-accessible")

// ErrShortBuffer: Memcpy into a destination smaller than the source.
var ErrShortBuffer = errors.New("memory: destination smaller than source")

// ErrUnsupportedType: Memset with a value of a type it cannot write.
var ErrUnsupportedType = errors.New("memory: unsupported value type")

// ErrForeignMemory: a memory primitive of TensorEngine (Memclr, Memcpy, Memset) was given memory
// that is not a live block of its Allocator or a tensor of the engine.
var ErrForeignMemory = errors.New("memory: not memory of this engine")

// ErrUnwalkable: Reclaimer.Reclaim could not read a value reachable from its roots, so it freed
// nothing.
var ErrUnwalkable = errors.New("memory: cannot walk the roots")
