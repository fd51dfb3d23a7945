package graphexec

import "github.com/gmlake/gmlake/gpu/cudnn"

// cnnConfig configures the cuDNN lowering of the convolutional kinds.
type cnnConfig struct {
	handle *cudnn.Handle
	math   *cudnn.MathType // nil: FMAMath
}

// WithCuDNN makes the Machine run its convolutional ops on h (a handle on the Device's stream,
// made with the Device's context current), which the caller closes after the Machine. Without
// it a Machine that has such ops opens cuDNN and makes its own handle on first use (with the
// math of WithConvMath), closed by Close.
func WithCuDNN(h *cudnn.Handle) Option { return func(c *config) { c.cnn.handle = h } }

// WithConvMath sets the math of the Machine's own cuDNN handle: cudnn.FMAMath (the default) keeps
// float32 convolutions exact, cudnn.DefaultMath lets cuDNN use TF32 tensor cores as PyTorch does.
func WithConvMath(m cudnn.MathType) Option { return func(c *config) { c.cnn.math = &m } }
