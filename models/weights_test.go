package models

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// countingEngine allocates from the Go heap but through tensor.Engine.Alloc,
// as a gmlake engine would, and can be told to fail.
type countingEngine struct {
	tensor.StdEng
	allocs, bytes int64
	failAfter     int64 // fail the allocation after this many (0: never)
	keep          [][]byte
}

type heapMemory []byte

func (m heapMemory) Uintptr() uintptr { return uintptr(unsafe.Pointer(&m[0])) }
func (m heapMemory) MemSize() uintptr { return uintptr(len(m)) }

var errNoMemory = errors.New("test engine: out of memory")

func (e *countingEngine) NonStdAlloc() {}

func (e *countingEngine) Alloc(size int64) (tensor.Memory, error) {
	if e.failAfter > 0 && e.allocs >= e.failAfter {
		return nil, errNoMemory
	}
	e.allocs++
	e.bytes += size
	b := make([]byte, size)
	e.keep = append(e.keep, b)
	return heapMemory(b), nil
}

func TestWeightsThroughEngine(t *testing.T) {
	cfg, err := Preset("llama-tiny")
	require.NoError(t, err)
	eng := &countingEngine{}
	w, err := InitWeights(cfg, 1, eng)
	require.NoError(t, err)
	assert.Equal(t, int64(len(paramSpecs(cfg))), eng.allocs)
	assert.Equal(t, 4*cfg.ParamCount(), eng.bytes)
	for name, tt := range w.Tensors {
		assert.Same(t, eng, tt.Engine(), name)
	}

	again, err := InitWeights(cfg, 1, nil)
	require.NoError(t, err)
	for name, tt := range w.Tensors {
		assert.Equal(t, tt.Data(), again.Tensors[name].Data(), "seeded init of %s", name)
	}

	g, err := Build(w, BuildOptions{Batch: 1, Seq: 4, LoRA: &LoRA{Rank: 2, Alpha: 2, Targets: []string{"q"}}, Engine: eng})
	require.NoError(t, err)
	assert.Equal(t, int64(len(paramSpecs(cfg))+len(g.Params)), eng.allocs, "adapters come from the engine")

	dir := fixtureDir(t, "llama-tiny")
	_, err = LoadWeights(dir, cfg, &countingEngine{failAfter: 3})
	assert.ErrorIs(t, err, errNoMemory)
}

// writeSafetensors writes tensors given as raw little-endian bytes.
func writeSafetensors(t *testing.T, path string, tensors map[string]safetensorsEntry, raw map[string][]byte) {
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for name, e := range tensors {
		e.Offsets = [2]int64{int64(len(data)), int64(len(data) + len(raw[name]))}
		data = append(data, raw[name]...)
		header[name] = e
	}
	hdr, err := json.Marshal(header)
	require.NoError(t, err)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	out = append(append(out, hdr...), data...)
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

func TestSafetensorsDtypes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	f32 := binary.LittleEndian.AppendUint32(nil, math.Float32bits(-1.5))
	f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(3.25))
	bf16 := binary.LittleEndian.AppendUint16(nil, uint16(math.Float32bits(-1.5)>>16))
	bf16 = binary.LittleEndian.AppendUint16(bf16, uint16(math.Float32bits(3.25)>>16))
	f16 := binary.LittleEndian.AppendUint16(nil, 0xBE00) // -1.5
	f16 = binary.LittleEndian.AppendUint16(f16, 0x4280)  // 3.25
	f16 = binary.LittleEndian.AppendUint16(f16, 0x0001)  // 2^-24
	f16 = binary.LittleEndian.AppendUint16(f16, 0xFC00)  // -inf
	writeSafetensors(t, path, map[string]safetensorsEntry{
		"a": {Dtype: "F32", Shape: []int{2}}, "b": {Dtype: "BF16", Shape: []int{2}}, "c": {Dtype: "F16", Shape: []int{4}},
	}, map[string][]byte{"a": f32, "b": bf16, "c": f16})

	st, err := openSafetensors(path)
	require.NoError(t, err)
	defer st.Close()
	for _, tc := range []struct {
		name string
		want []float32
	}{
		{"a", []float32{-1.5, 3.25}},
		{"b", []float32{-1.5, 3.25}},
		{"c", []float32{-1.5, 3.25, float32(math.Ldexp(1, -24)), float32(math.Inf(-1))}},
	} {
		got := make([]float32, len(tc.want))
		require.NoError(t, st.readInto(tc.name, got), tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	assert.ErrorIs(t, st.readInto("a", make([]float32, 3)), ErrBadCheckpoint, "size mismatch")
	assert.ErrorIs(t, st.readInto("zzz", make([]float32, 1)), ErrBadCheckpoint, "missing")
}

func TestLoadWeightsErrors(t *testing.T) {
	cfg, err := Preset("gpt2-tiny")
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = LoadWeights(dir, cfg, nil)
	assert.Error(t, err, "no file")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte{1, 2, 3}, 0o644))
	_, err = LoadWeights(dir, cfg, nil)
	assert.ErrorIs(t, err, ErrBadCheckpoint, "truncated header")

	writeSafetensors(t, filepath.Join(dir, "model.safetensors"),
		map[string]safetensorsEntry{"transformer.wte.weight": {Dtype: "F32", Shape: []int{1}}},
		map[string][]byte{"transformer.wte.weight": make([]byte, 4)})
	_, err = LoadWeights(dir, cfg, nil)
	assert.ErrorIs(t, err, ErrBadCheckpoint, "wrong shape")

	bigger := cfg
	bigger.Hidden = 128
	_, err = LoadWeights(fixtureDir(t, "gpt2-tiny"), bigger, nil)
	assert.ErrorIs(t, err, ErrBadCheckpoint, "config does not fit the checkpoint")
}
