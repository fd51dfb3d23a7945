package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/cuda"
)

// TestShortRunGPU runs the demo's fine-tuning on the GPU (skipped without one): it must report the
// GPU run and gmlake's GPU memory.
func TestShortRunGPU(t *testing.T) {
	drv, err := cuda.New()
	if errors.Is(err, cuda.ErrUnavailable) {
		t.Skipf("no GPU: %v", err)
	}
	require.NoError(t, err)
	require.NoError(t, drv.Close())
	var out bytes.Buffer
	require.NoError(t, finetune(parse(t, "--device", "gpu", "--steps", "20", "--pretrain", "20", "--batch", "4",
		"--min-seq", "8", "--max-seq", "24"), &out))
	text := out.String()
	for _, want := range []string{"on the GPU", "gmlake (GPU memory)", "peak reserved", "held-out"} {
		assert.Contains(t, text, want)
	}
	t.Log(text)
}

// TestCPUFallback: --device cpu keeps the CPU path in a GPU build.
func TestCPUFallback(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, finetune(parse(t, "--device", "cpu", "--steps", "2", "--pretrain", "1", "--batch", "2",
		"--min-seq", "8", "--max-seq", "8", "--no-compare", "--plot", ""), &out))
	assert.Contains(t, out.String(), "gmlake (real host memory)")
}
