package graphexec

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/gpu/cudnn"
)

// Every convolutional kind has a lowering, and exec reaches it (not the standard ops' path, whose
// kinds are numbered below these): without cuDNN here, a convolution fails for want of the
// library, not as an unsupported op.
func TestCNNKindsReachTheirLowering(t *testing.T) {
	for _, k := range []Kind{KindConv, KindBatchNorm, KindReLU, KindPool, KindGlobalAvgPool, KindClassCrossEntropy} {
		assert.Contains(t, lowerings, k, "%v", k)
	}
	if _, err := cudnn.Open(); err == nil {
		t.Skip("cuDNN is present: the GPU tests cover the lowering")
	}
	m := &Machine{cnn: newCNNState(cnnConfig{})}
	err := m.exec(0, Desc{Kind: KindConv, CNN: &CNN{}}, nil, nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, cudnn.ErrUnavailable), "%v", err)
	assert.False(t, errors.Is(err, ErrUnsupported), "%v", err)
}
