//go:build !gmlakegpu

package main

import (
	"errors"
	"io"
	"time"

	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train"
)

// finetuneOnGPU is the GPU path, which this build lacks (see gpu.go): --device gpu is an error,
// auto and cpu run on the CPU.
func finetuneOnGPU(c cli, _ *models.Weights, _ train.Counting, _ io.Writer, _ time.Time) (bool, error) {
	if c.Device == "gpu" {
		return true, errors.New("--device gpu: this binary was built without -tags gmlakegpu")
	}
	return false, nil
}
