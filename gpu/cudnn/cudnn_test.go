package cudnn

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/internal/dl"
)

// The perf structs the _v7 getters fill are 48 bytes with the size_t at offset 16 (cudnn_cnn.h).
func TestAlgoPerfLayout(t *testing.T) {
	var p algoPerf
	assert.Equal(t, uintptr(48), unsafe.Sizeof(p))
	assert.Equal(t, uintptr(16), unsafe.Offsetof(p.Memory))
	assert.Equal(t, uintptr(24), unsafe.Offsetof(p.Determinism))
}

func TestOpenMissingLibrary(t *testing.T) {
	t.Setenv(EnvVar, filepath.Join(t.TempDir(), "libcudnn.so.9"))
	_, err := open()
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.ErrorIs(t, err, dl.ErrNotFound)
	var oe *dl.OpenError
	require.True(t, errors.As(err, &oe))
	assert.Len(t, oe.Tried, 1)
	assert.Contains(t, err.Error(), EnvVar)
}

// A library that is not cuDNN (here the C library, always present) lacks its functions.
func TestOpenNotCuDNN(t *testing.T) {
	libc := ""
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			libc = p
			break
		}
	}
	if libc == "" {
		t.Skip("no libc.so.6 at a known path")
	}
	t.Setenv(EnvVar, libc)
	_, err := open()
	assert.ErrorIs(t, err, ErrUnavailable)
	var se *dl.SymbolError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "cudnnGetVersion", se.Symbol)
}

func TestCandidates(t *testing.T) {
	assert.Equal(t, "libcudnn.so.9", Candidates[0])
	assert.Contains(t, Candidates, "/usr/lib/x86_64-linux-gnu/libcudnn.so.8")
}

func TestErrors(t *testing.T) {
	var err error = &Error{Call: "cudnnConvolutionForward", Status: 3000, Text: "CUDNN_STATUS_NOT_SUPPORTED"}
	assert.ErrorIs(t, err, ErrStatus)
	assert.Contains(t, err.Error(), "cudnnConvolutionForward")
	g := ConvGeometry{N: 2, C: 3, H: 7, W: 6, K: 4, R: 3, S: 3, StrideH: 2, StrideW: 1, PadH: 1, PadW: 0}
	assert.Equal(t, 4, g.P())
	assert.Equal(t, 4, g.Q())
	assert.False(t, Shape{N: 1, C: 0, H: 1, W: 1}.valid())
}
