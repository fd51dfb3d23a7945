package cuda

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gmlake/gmlake/stitch"
)

// These run without a GPU: they check how result codes become errors.
func TestErrorMeaning(t *testing.T) {
	tests := []struct {
		code         Result
		name         string
		oom, unavail bool
	}{
		{OutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", true, false},
		{NoDevice, "CUDA_ERROR_NO_DEVICE", false, true},
		{StubLibrary, "CUDA_ERROR_STUB_LIBRARY", false, true},
		{NotSupported, "CUDA_ERROR_NOT_SUPPORTED", false, true},
		{InvalidValue, "CUDA_ERROR_INVALID_VALUE", false, false},
		{IllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error = &Error{Call: "cuMemCreate", Code: tt.code}
			assert.Equal(t, tt.oom, errors.Is(err, stitch.ErrOutOfMemory))
			assert.Equal(t, tt.unavail, errors.Is(err, ErrUnavailable))
			assert.Contains(t, err.Error(), "cuMemCreate")
			assert.Contains(t, err.Error(), tt.name)
			var ce *Error
			assert.True(t, errors.As(err, &ce))
			assert.Equal(t, tt.code, ce.Code)
		})
	}
}

func TestCheck(t *testing.T) {
	assert.NoError(t, check("cuInit", 0))
	err := check("cuMemMap", 1)
	var ce *Error
	assert.True(t, errors.As(err, &ce))
	assert.Equal(t, "cuMemMap", ce.Call)
	assert.Equal(t, InvalidValue, ce.Code)
}

func TestUnlistedCodeStillNamed(t *testing.T) {
	s := Result(999).String()
	assert.NotEmpty(t, s)
}
