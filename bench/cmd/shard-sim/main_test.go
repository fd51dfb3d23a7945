package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/dataparallel/shardsim"
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

func TestShardSimWritesRowsAndTables(t *testing.T) {
	md := filepath.Join(t.TempDir(), "SHARDING.md")
	c := parse(t, "--workload", "gpt2-tiny:full:2:ckpt,gpt2-tiny:lora:3", "--ranks", "1,2,4",
		"--allocators", "gmlake,caching", "--seq-min", "16", "--seq-max", "64", "--steps", "4", "--markdown", md)
	var stdout, stderr bytes.Buffer
	require.NoError(t, c.run(&stdout, &stderr))
	assert.Empty(t, stderr.String(), "progress only with --verbose")

	var rows []shardsim.Row
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var r shardsim.Row
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		rows = append(rows, r)
	}
	require.Len(t, rows, 2*3*2, "workloads × world sizes × allocators")
	assert.Equal(t, "gpt2-tiny-full-z2-ckpt", rows[0].Workload)
	assert.Equal(t, "gpt2-tiny-lora-z3", rows[6].Workload)
	for _, r := range rows {
		assert.Len(t, r.Measured, r.Ranks)
		assert.Positive(t, r.PeakActive)
		assert.GreaterOrEqual(t, r.PeakReserved, r.PeakActive)
	}

	text, err := os.ReadFile(md)
	require.NoError(t, err)
	s := string(text)
	assert.Contains(t, s, "## gpt2-tiny-full-z2-ckpt")
	assert.Contains(t, s, "## gpt2-tiny-lora-z3")
	assert.Contains(t, s, "gmlake: reserved")
	assert.Contains(t, s, "caching: cap/act")
	assert.Contains(t, s, "simulated traces, not measurements")
	assert.Equal(t, 2*(1+3), strings.Count(s, "\n| "), "per table: a header and one line per world size")

	again := filepath.Join(t.TempDir(), "SHARDING.md") // the name is part of the text
	c = parse(t, "--workload", "gpt2-tiny:full:2:ckpt,gpt2-tiny:lora:3", "--ranks", "1,2,4",
		"--allocators", "gmlake,caching", "--seq-min", "16", "--seq-max", "64", "--steps", "4", "--markdown", again, "--quiet")
	stdout.Reset()
	require.NoError(t, c.run(&stdout, &stderr))
	assert.Empty(t, stdout.String())
	text2, err := os.ReadFile(again)
	require.NoError(t, err)
	assert.Equal(t, s, string(text2), "the tables are deterministic")
}

func TestShardSimRejectsBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--workload", "gpt2-tiny:full"},
		{"--workload", "nope:full:2"},
		{"--workload", "gpt2-tiny:full:2", "--allocators", "magic"},
		{"--workload", "gpt2-tiny:full:2", "--zero", "4"},
	} {
		c := parse(t, append(args, "--ranks", "1", "--seq-min", "16", "--seq-max", "32", "--steps", "1")...)
		assert.Error(t, c.run(&bytes.Buffer{}, &bytes.Buffer{}), "%v", args)
	}
}

// TestShardSimZeroOverridesStages: --zero runs each workload at every stage given, in that order.
func TestShardSimZeroOverridesStages(t *testing.T) {
	c := parse(t, "--workload", "gpt2-tiny:full:1:ckpt,gpt2-tiny:lora:2", "--zero", "2,3", "--ranks", "1,2",
		"--allocators", "gmlake", "--seq-min", "16", "--seq-max", "32", "--steps", "2")
	st, err := c.study(nil)
	require.NoError(t, err)
	var names []string
	for _, w := range st.Workloads {
		names = append(names, w.Name())
	}
	assert.Equal(t, []string{"gpt2-tiny-full-z2-ckpt", "gpt2-tiny-full-z3-ckpt", "gpt2-tiny-lora-z2", "gpt2-tiny-lora-z3"}, names)
}
