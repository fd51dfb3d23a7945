package models

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"

	"gorgonia.org/tensor"
)

// Weights holds a model's parameters as float32 tensors under their Hugging
// Face names. Graphs built from the same Weights (one per batch/sequence
// shape) bind these very tensors, so an optimizer step on them is seen by
// every graph. Build adds LoRA adapter tensors here on first use
// (see LoRA.names); Weights is not safe for concurrent Build calls.
type Weights struct {
	Config  Config
	Tensors map[string]*tensor.Dense
}

// newTensor allocates a float32 tensor through eng, or on the Go heap when
// eng is nil. tensor.New panics when the engine's Alloc fails; that becomes
// an error wrapping the engine's (so errors.Is sees, say, an out-of-memory).
func newTensor(eng tensor.Engine, shape ...int) (t *tensor.Dense, err error) {
	if eng == nil {
		return tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(shape...)), nil
	}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("models: allocating a float32 tensor of shape %v: %w", shape, e)
			} else {
				err = fmt.Errorf("models: allocating a float32 tensor of shape %v: %v", shape, r)
			}
		}
	}()
	return tensor.New(tensor.WithEngine(eng), tensor.Of(tensor.Float32), tensor.WithShape(shape...)), nil
}

// float32s is the backing slice of a contiguous float32 tensor.
func float32s(t *tensor.Dense) []float32 { return t.Data().([]float32) }

// InitWeights creates freshly initialized weights for cfg: normal(0, 0.02)
// matrices and embeddings, unit norm gains, zero biases. Tensors are allocated
// through eng (nil: the Go heap). The same seed gives the same weights.
func InitWeights(cfg Config, seed int64, eng tensor.Engine) (*Weights, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewSource(seed))
	w := &Weights{Config: cfg, Tensors: make(map[string]*tensor.Dense)}
	for _, s := range paramSpecs(cfg) {
		t, err := newTensor(eng, s.shape...)
		if err != nil {
			return nil, err
		}
		fill(float32s(t), s.init, rng)
		w.Tensors[s.name] = t
	}
	return w, nil
}

func fill(data []float32, kind initKind, rng *rand.Rand) {
	for i := range data {
		switch kind {
		case initNormal:
			data[i] = float32(rng.NormFloat64() * 0.02)
		case initOnes:
			data[i] = 1
		default:
			data[i] = 0
		}
	}
}

// LoadWeights reads dir/model.safetensors into tensors allocated through eng
// (nil: the Go heap). Every parameter cfg needs must be present with the
// expected shape; extra tensors (such as a saved copy of a tied lm_head, or
// GPT-2's attention-mask buffers) are ignored. GPT-2 checkpoints saved without
// the "transformer." prefix are accepted.
func LoadWeights(dir string, cfg Config, eng tensor.Engine) (*Weights, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st, err := openSafetensors(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	w := &Weights{Config: cfg, Tensors: make(map[string]*tensor.Dense)}
	for _, s := range paramSpecs(cfg) {
		stored := s.name
		if _, ok := st.entries[stored]; !ok && cfg.Arch == ArchGPT2 {
			stored = strings.TrimPrefix(stored, "transformer.")
		}
		e, ok := st.entries[stored]
		if !ok {
			return nil, fmt.Errorf("%w: tensor %s missing", ErrBadCheckpoint, s.name)
		}
		if !sameShape(e.Shape, s.shape) {
			return nil, fmt.Errorf("%w: tensor %s has shape %v, config wants %v", ErrBadCheckpoint, s.name, e.Shape, s.shape)
		}
		t, err := newTensor(eng, s.shape...)
		if err != nil {
			return nil, err
		}
		if err := st.readInto(stored, float32s(t)); err != nil {
			return nil, err
		}
		w.Tensors[s.name] = t
	}
	return w, nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
