package kernels_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/gpu/kernels"
	"github.com/gmlake/gmlake/gpu/nvrtc"
	"github.com/gmlake/gmlake/internal/dl"
)

func TestKernelNamesAreUnique(t *testing.T) {
	seen := map[string]string{}
	for _, s := range kernels.All() {
		require.NotEmpty(t, s.Kernels, "%s defines no kernel", s.Name)
		for _, k := range s.Kernels {
			if prev, dup := seen[k]; dup {
				t.Errorf("kernel %s defined in %s and %s", k, prev, s.Name)
			}
			seen[k] = s.Name
		}
	}
	// A few the gpu package relies on, one per source, so that a broken name table fails here.
	for _, k := range []string{"add_f32", "add_f32_c", "exp_f32", "sum_last_f32", "causal_softmax_f32",
		"layernorm_fwd_f32", "rmsnorm_bwd_dx_f32", "gelu_bwd_f32", "swiglu_bwd_f32", "rope_bwd_f32",
		"embedding_scatter_add_f32", "cross_entropy_bwd_f32", "adamw_f32", "gte_f32", "gte_f32_c", "softplus_f32",
		"assign_strided_f32", "softmax_axis_bwd_f32", "dropout_bwd_f32"} {
		assert.Contains(t, seen, k)
	}
}

// TestKernelsCompile compiles every source to PTX with NVRTC (no GPU needed) for the oldest and the
// newest architecture the project targets, and checks that every kernel is in the PTX. Without
// NVRTC it skips, unless GMLAKE_REQUIRE_NVRTC=1 (what `make kernels-check` sets for CI).
func TestKernelsCompile(t *testing.T) {
	c, err := nvrtc.Open()
	if errors.Is(err, dl.ErrNotFound) && os.Getenv("GMLAKE_REQUIRE_NVRTC") != "1" {
		t.Skipf("NVRTC not available (make kernels-check fetches it): %v", err)
	}
	require.NoError(t, err)
	major, minor, err := c.Version()
	require.NoError(t, err)
	t.Logf("NVRTC %d.%d from %s", major, minor, c.Path())

	for _, arch := range []string{"compute_80", "compute_90"} {
		for _, s := range kernels.All() {
			t.Run(fmt.Sprintf("%s/%s", arch, s.Name), func(t *testing.T) {
				ptx, err := c.Compile(s.Name, s.Code, "--gpu-architecture="+arch, "--std=c++14")
				require.NoError(t, err)
				text := string(ptx)
				for _, k := range s.Kernels {
					assert.True(t, strings.Contains(text, ".entry "+k+"("), "kernel %s missing from the PTX", k)
				}
			})
		}
	}
}

func TestCompileErrorCarriesTheLog(t *testing.T) {
	c, err := nvrtc.Open()
	if errors.Is(err, dl.ErrNotFound) && os.Getenv("GMLAKE_REQUIRE_NVRTC") != "1" {
		t.Skipf("NVRTC not available: %v", err)
	}
	require.NoError(t, err)
	_, err = c.Compile("broken.cu", `extern "C" __global__ void k(float *p) { p[0] = undefined_name; }`)
	require.Error(t, err)
	assert.ErrorIs(t, err, nvrtc.ErrCompile)
	var ce *nvrtc.CompileError
	require.True(t, errors.As(err, &ce))
	assert.Contains(t, ce.Log, "undefined_name")
}
