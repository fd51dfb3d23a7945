package nccl

import "log/slog"

// Option configures Open.
type Option func(*config)

type config struct {
	nvls   bool
	logger *slog.Logger
	// contextsFromNCCL takes cuCtxGetCurrent/cuCtxSetCurrent from the NCCL library itself instead
	// of the driver's: the fake NCCL of the tests exports both.
	contextsFromNCCL bool
}

// WithNVLS(true) leaves NCCL_NVLS_ENABLE as the environment has it instead of setting it to 0.
func WithNVLS(on bool) Option { return func(c *config) { c.nvls = on } }

// WithLogger logs the library opened (debug) and an overridden NVLS setting (warn). Default: none.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}
