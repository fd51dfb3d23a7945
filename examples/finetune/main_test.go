package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/gmlake/gmlake/trace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const fixtures = "../../../shared/fixtures/hf"

func parse(t *testing.T, args ...string) cli {
	t.Helper()
	var c cli
	p, err := kong.New(&c, kong.Vars{"presets": ""})
	require.NoError(t, err)
	_, err = p.Parse(args)
	require.NoError(t, err)
	return c
}

// TestEvalMatchesReference: the loss printed by --eval --json on each fixture is PyTorch's.
func TestEvalMatchesReference(t *testing.T) {
	for _, model := range []string{"gpt2-tiny", "llama-tiny"} {
		t.Run(model, func(t *testing.T) {
			dir := filepath.Join(fixtures, model)
			raw, err := os.ReadFile(filepath.Join(dir, "reference.json"))
			if os.IsNotExist(err) {
				t.Skip("fixtures not present")
			}
			require.NoError(t, err)
			var ref struct{ Loss float64 }
			require.NoError(t, json.Unmarshal(raw, &ref))

			var out bytes.Buffer
			require.NoError(t, evaluate(parse(t, "--checkpoint", dir, "--eval", "--json"), &out))
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			require.Len(t, lines, 1, "one JSON line")
			var got struct{ Loss float64 }
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
			assert.InEpsilon(t, ref.Loss, got.Loss, 1e-4)
		})
	}
}

// TestShortRun runs the whole demo briefly on gmlake memory and checks what it reports and writes.
func TestShortRun(t *testing.T) {
	dir := t.TempDir()
	tracePath, plotPath := filepath.Join(dir, "run.trace.gz"), filepath.Join(dir, "run.png")
	c := parse(t, "--device", "cpu", "--steps", "4", "--pretrain", "2", "--batch", "2", "--min-seq", "8", "--max-seq", "16",
		"--trace", tracePath, "--plot", plotPath)
	var out bytes.Buffer
	require.NoError(t, finetune(c, &out))
	text := out.String()
	for _, want := range []string{"workload gpt2-tiny-lora-ckpt-off", "gmlake (real host memory)", "peak reserved", "gorgonia", "caching"} {
		assert.Contains(t, text, want)
	}
	tr, err := trace.ReadFile(tracePath)
	require.NoError(t, err)
	require.NoError(t, tr.Validate())
	assert.Len(t, tr.Iterations(), 4)
	info, err := os.Stat(plotPath)
	require.NoError(t, err)
	assert.Positive(t, info.Size())
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--steps", "0"}, {"--min-seq", "1"}, {"--min-seq", "20", "--max-seq", "10"}} {
		assert.Error(t, finetune(parse(t, args...), &bytes.Buffer{}), "%v", args)
	}
	assert.Error(t, evaluate(parse(t, "--eval"), &bytes.Buffer{}), "--eval without --checkpoint")
}
