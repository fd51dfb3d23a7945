package cublas

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/internal/dl"
)

// Without a GPU only the loader can be tested: an unopenable override must give a typed error that
// names what was tried and the variable to set.
func TestOpenReportsWhatWasTried(t *testing.T) {
	t.Setenv(EnvVar, "/nonexistent/libcublas.so.99")
	_, err := Open()
	require.Error(t, err)
	assert.ErrorIs(t, err, dl.ErrNotFound)
	var oe *dl.OpenError
	require.True(t, errors.As(err, &oe))
	assert.Equal(t, []string{"/nonexistent/libcublas.so.99"}, trimReasons(oe.Tried))
	assert.Contains(t, err.Error(), EnvVar)
}

func TestErrorNamesTheStatus(t *testing.T) {
	err := check("cublasSgemm_v2", 7)
	assert.ErrorIs(t, err, ErrCublas)
	assert.EqualError(t, err, "cublas: cublasSgemm_v2: CUBLAS_STATUS_INVALID_VALUE")
	assert.NoError(t, check("x", 0))
}

func trimReasons(tried []string) []string {
	out := make([]string, len(tried))
	for i, s := range tried {
		for j := 0; j < len(s); j++ {
			if s[j] == ':' {
				s = s[:j]
				break
			}
		}
		out[i] = s
	}
	return out
}
