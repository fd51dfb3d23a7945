package nccl

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestErrorsWrapTheirSentinels(t *testing.T) {
	tests := []struct {
		result Result
		want   error
		name   string
	}{
		{UnhandledCudaError, ErrUnhandledCuda, "ncclUnhandledCudaError"},
		{SystemError, ErrSystem, "ncclSystemError"},
		{InternalError, ErrInternal, "ncclInternalError"},
		{InvalidArgument, ErrInvalidArgument, "ncclInvalidArgument"},
		{InvalidUsage, ErrInvalidUsage, "ncclInvalidUsage"},
		{RemoteError, ErrRemote, "ncclRemoteError"},
		{InProgress, ErrInProgress, "ncclInProgress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := error(&Error{Call: "ncclAllReduce", Result: tt.result, Message: "something broke"})
			assert.ErrorIs(t, err, ErrNCCL)
			assert.ErrorIs(t, err, tt.want)
			assert.Equal(t, tt.name, tt.result.String())
			assert.Contains(t, err.Error(), "ncclAllReduce")
			assert.Contains(t, err.Error(), tt.name)
			assert.Contains(t, err.Error(), "something broke")
			var e *Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, tt.result, e.Result)
		})
	}
	unknown := &Error{Call: "ncclGroupEnd", Result: 42}
	assert.ErrorIs(t, unknown, ErrNCCL)
	assert.NotErrorIs(t, unknown, ErrInvalidArgument)
	assert.Equal(t, "ncclResult(42)", Result(42).String())
}

func TestDataTypeSizes(t *testing.T) {
	want := map[DataType]int{Int8: 1, Uint8: 1, Int32: 4, Uint32: 4, Int64: 8, Uint64: 8,
		Float16: 2, Float32: 4, Float64: 8, BFloat16: 2, DataType(99): 0}
	for dt, size := range want {
		assert.Equal(t, size, dt.Size(), "data type %d", dt)
	}
}

func TestOpenMissingLibrary(t *testing.T) {
	t.Setenv(EnvVar, "/nonexistent/libnccl.so.2")
	_, err := open(config{logger: discard()})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUnavailable)
	var oe *OpenError
	require.True(t, errors.As(err, &oe))
	assert.Equal(t, "NCCL", oe.Library)
	require.Len(t, oe.Tried, 1, "the override replaces the candidate list")
	assert.Contains(t, oe.Tried[0], "/nonexistent/libnccl.so.2")
	assert.Contains(t, err.Error(), EnvVar)
}

func TestOpenLibraryWithoutSymbols(t *testing.T) {
	t.Setenv(EnvVar, "libc.so.6") // opens, but has no NCCL in it
	_, err := open(config{logger: discard()})
	assert.ErrorIs(t, err, ErrUnavailable)
	var se *SymbolError
	require.True(t, errors.As(err, &se), "got %v", err)
	assert.Equal(t, "libc.so.6", se.Path)
	assert.Contains(t, se.Symbol, "nccl")
}

func TestOpenTurnsNVLSOff(t *testing.T) {
	tests := []struct {
		name string
		nvls bool
		want string
	}{
		{"default: multicast off", false, "0"},
		{"WithNVLS(true): left alone", true, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(NVLSEnvVar, "1")
			t.Setenv(EnvVar, "/nonexistent/libnccl.so.2")
			_, err := open(config{nvls: tt.nvls, logger: discard()})
			require.ErrorIs(t, err, ErrUnavailable)
			assert.Equal(t, tt.want, os.Getenv(NVLSEnvVar))
		})
	}
}

// TestOpen opens the real library where there is one and checks it answers; elsewhere it checks
// that the failure says what was tried.
func TestOpen(t *testing.T) {
	l, err := Open()
	if err != nil {
		assert.ErrorIs(t, err, ErrUnavailable)
		t.Skipf("no NCCL here: %v", err)
	}
	v, err := l.Version()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, v, 20000, "NCCL 2.x")
	assert.Equal(t, "0", os.Getenv(NVLSEnvVar))
	assert.NotEmpty(t, l.ErrorString(InvalidArgument))
}
