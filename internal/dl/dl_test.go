package dl

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpen(t *testing.T) {
	tests := []struct {
		name       string
		env        string
		candidates []string
		wantPath   string
		wantErr    error
	}{
		{name: "first candidate missing, second found", candidates: []string{"libnot-there.so.7", "libc.so.6"}, wantPath: "libc.so.6"},
		{name: "none found", candidates: []string{"libnot-there.so.7", "libnot-there.so.8"}, wantErr: ErrNotFound},
		{name: "env overrides candidates", env: "libnot-there.so.9", candidates: []string{"libc.so.6"}, wantErr: ErrNotFound},
		{name: "env found", env: "libm.so.6", candidates: []string{"libnot-there.so.7"}, wantPath: "libm.so.6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GMLAKE_DL_TEST", tt.env)
			lib, err := Open("test library", "GMLAKE_DL_TEST", tt.candidates)
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.ErrorIs(t, err, tt.wantErr)
				var oe *OpenError
				require.True(t, errors.As(err, &oe))
				assert.NotEmpty(t, oe.Tried)
				assert.Contains(t, err.Error(), "GMLAKE_DL_TEST")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantPath, lib.Path())
		})
	}
}

func TestSymbol(t *testing.T) {
	lib, err := Open("libc", "GMLAKE_DL_TEST_UNSET", []string{"libc.so.6"})
	require.NoError(t, err)
	p, err := lib.Symbol("strlen")
	require.NoError(t, err)
	assert.NotNil(t, p)

	_, err = lib.Symbol("no_such_symbol_in_libc")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrMissingSymbol)
	var se *SymbolError
	require.True(t, errors.As(err, &se))
	assert.Equal(t, "no_such_symbol_in_libc", se.Symbol)

	var a, b uintptr
	require.NoError(t, lib.Symbols(map[string]*uintptr{"strlen": &a, "memcpy": &b}))
	assert.NotZero(t, a)
	assert.NotZero(t, b)
}

// Calls into libc check the calling convention: arguments in order, pointers into Go memory, the
// result whole (Call) or as a 32-bit int (Call32).
func TestCall(t *testing.T) {
	lib, err := Open("libc", "", []string{"libc.so.6"})
	require.NoError(t, err)
	strlen, err := lib.Symbol("strlen")
	require.NoError(t, err)
	s := CString("seventeen bytes..")
	assert.Equal(t, uintptr(17), Call(strlen, BytePtr(s)))

	memset, err := lib.Symbol("memset")
	require.NoError(t, err)
	buf := make([]byte, 8)
	Call(memset, uintptr(unsafe.Pointer(&buf[2])), 0xab, 3)
	assert.Equal(t, []byte{0, 0, 0xab, 0xab, 0xab, 0, 0, 0}, buf)

	abs, err := lib.Symbol("abs")
	require.NoError(t, err)
	minus := int32(-42)
	assert.Equal(t, int32(42), Call32(abs, uintptr(minus)))

	strerror, err := lib.Symbol("strerror")
	require.NoError(t, err)
	assert.Equal(t, "No such file or directory", GoString(Call(strerror, 2)))
	assert.Equal(t, "", GoString(0))
	assert.Equal(t, []byte("No such"), CBytes(Call(strerror, 2), 7))
}

func TestSpecs(t *testing.T) {
	for _, s := range []Spec{CUDADriver, CuBLAS, NVRTC, CuDNN, NCCL} {
		assert.NotEmpty(t, s.What)
		assert.Regexp(t, `^GMLAKE_[A-Z]+$`, s.EnvVar)
		assert.NotEmpty(t, s.Candidates)
	}
	t.Setenv(NCCL.EnvVar, "libnot-there.so.3")
	_, err := NCCL.Open()
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorContains(t, err, "libnot-there.so.3")
	assert.ErrorContains(t, err, "GMLAKE_NCCL")
}

func TestCUDACandidates(t *testing.T) {
	got := CUDACandidates("liba.so.2", "liba.so")
	assert.Equal(t, []string{
		"liba.so.2", "liba.so",
		"/usr/local/cuda/lib64/liba.so.2", "/usr/local/cuda/lib64/liba.so",
		"/usr/local/cuda/targets/x86_64-linux/lib/liba.so.2", "/usr/local/cuda/targets/x86_64-linux/lib/liba.so",
	}, got)
}
