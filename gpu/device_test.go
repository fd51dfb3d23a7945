package gpu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeviceReport logs what the Device found (GPU, architecture, NVRTC and cuBLAS versions), the
// facts a GPU run's record needs, and checks they are sane.
func TestDeviceReport(t *testing.T) {
	d := newDevice(t)
	major, minor, err := d.compiler.Version()
	require.NoError(t, err)
	var blasVersion int
	require.NoError(t, d.withContext(func() (err error) { blasVersion, err = d.blas.Version(); return err }))
	t.Logf("device %q, %d SMs, kernels for %s; NVRTC %d.%d (%s); cuBLAS %d", d.Name(), d.sms, d.Arch(), major, minor,
		d.compiler.Path(), blasVersion)
	assert.NotEmpty(t, d.Name())
	assert.Positive(t, d.sms)
	assert.Positive(t, blasVersion)
}
