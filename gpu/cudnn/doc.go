// Package cudnn binds the legacy API of NVIDIA cuDNN (versions 8 and 9) that the project's
// convolutional networks need: convolution forward, backward-data and backward-filter with
// algorithm selection and workspace sizes, batch normalization's training forward pass, pooling,
// activations, tensor addition with broadcasting and the bias gradient.
//
// # Loading
//
// The library is opened at run time, without cgo, by the module's loader (internal/dl, over
// github.com/ebitengine/purego): one binary built with CGO_ENABLED=0 runs against whichever
// cuDNN a machine has. GMLAKE_CUDNN (a path), when set, is the only library tried; otherwise
// Candidates, newest soname first, each also under the usual folders. A machine without cuDNN
// gets an error wrapping ErrUnavailable and a *dl.OpenError saying what was tried; a library
// without a needed function one wrapping ErrUnavailable and a *dl.SymbolError. No header is read
// at build time either: the few enums and structs the calls take are declared here, each with
// the header that defines it.
//
// # Memory
//
// The package never allocates device memory. Every convolution workspace is the caller's: a
// ConvPlan says how many bytes each of its three algorithms needs, and each call takes the
// workspace's address, so the executor draws it from the allocator under test and returns it
// right after the call, and the allocator sees every workspace, as it sees a framework's.
//
// # Threads and streams
//
// As for every CUDA library, calls must run on an OS thread where the CUDA context that owns the
// memory is current (package gpu's Device.Do), and a Handle queues its work on the stream given
// to SetStream. Device addresses are uintptrs, never Go pointers. Tensors are float32, NCHW,
// contiguous.
package cudnn
