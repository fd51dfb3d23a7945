package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/dataparallel/gpudp"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/models"
)

func parse(t *testing.T, args ...string) *cli {
	t.Helper()
	var c cli
	p, err := kong.New(&c)
	require.NoError(t, err)
	_, err = p.Parse(args)
	require.NoError(t, err)
	return &c
}

func TestFlags(t *testing.T) {
	c := parse(t, "--world", "1,2,4", "--allocators", "gmlake,direct", "--preset", "llama-1b", "--lora", "--no-recompute")
	assert.Equal(t, []int{1, 2, 4}, c.World)
	assert.Equal(t, []int{2}, c.Zero, "ZeRO-2 by default")
	assert.Equal(t, []int{2, 3}, parse(t, "--zero", "2,3").Zero)
	assert.Equal(t, []string{"gmlake", "direct"}, c.Allocators)
	assert.True(t, c.LoRA)
	assert.False(t, c.Recompute)
	assert.Equal(t, 20, c.Steps)
}

// TestRunNeedsGPUs: without enough GPUs the command says so instead of running.
func TestRunNeedsGPUs(t *testing.T) {
	have, err := gpu.DeviceCount()
	c := parse(t, "--world", "1,64")
	err2 := c.run(&bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err2)
	if err != nil {
		assert.True(t, errors.Is(err2, gpu.ErrUnavailable), "got %v", err2)
	} else {
		assert.Contains(t, err2.Error(), "needs 64 GPUs", "have %d", have)
	}
	c = parse(t, "--preset", "gpt-9")
	assert.ErrorIs(t, c.run(&bytes.Buffer{}, &bytes.Buffer{}), models.ErrUnknownPreset)
	c = parse(t, "--zero", "2,1")
	assert.ErrorIs(t, c.run(&bytes.Buffer{}, &bytes.Buffer{}), gpudp.ErrStage)
}

func TestMarkdown(t *testing.T) {
	c := parse(t, "--preset", "gpt2-small")
	ranks := []gpudp.RankMemory{{PeakActive: 100 << 20, PeakReserved: 101 << 20, DriverCalls: 40}}
	md := markdown(c, []Result{{Stage: 3, World: 2, Allocator: "gmlake", SteadyMs: 12.5, WarmupMs: 300, Ranks: ranks, CallsPerStep: 2},
		{Stage: 3, World: 2, Allocator: "gorgonia", SteadyMs: 12.5 / 1.25, Ranks: ranks},
		{Stage: 2, World: 2, Allocator: "gmlake", SteadyMs: 9},
		{Stage: 3, World: 2, Allocator: "direct", Error: "out of memory"}})
	assert.Contains(t, md, "gpt2-small, full")
	assert.Equal(t, 6, strings.Count(md, "\n|"), "header, separator, four rows")
	assert.Contains(t, md, "| 3 | 2 | gmlake | 0.10 | 0.10 | 1.010 | 0.000 | 40 | 2.0 | 12.5 | 1.250 |")
	assert.Contains(t, md, "| 2 | 2 | gmlake | 0.00 | 0.00 |  | 0.000 | 0 | 0.0 | 9.0 |  |", "no pool at ZeRO-2: no ratio")
	assert.Contains(t, md, "out of memory")
}
