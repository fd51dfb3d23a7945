package traincmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/gpu/pool"
)

func TestCheckRun(t *testing.T) {
	require.NoError(t, CheckRun([]string{"gmlake", "gorgonia", "direct"}, 16, 4))
	assert.ErrorIs(t, CheckRun([]string{"gmlake", "GMLake"}, 16, 4), pool.ErrUnknown, "names are spelled as pool.New takes them")
	assert.ErrorIs(t, CheckRun([]string{"cudaMalloc"}, 16, 4), pool.ErrUnknown)
	err := CheckRun([]string{"gmlake"}, 4, 4)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no steady state")
}
