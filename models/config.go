package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Architectures understood by Build.
const (
	ArchGPT2  = "gpt2"
	ArchLlama = "llama"
)

// Config describes a decoder-only transformer. Field names follow the
// Hugging Face config.json fields they are read from (see LoadConfig).
type Config struct {
	Arch           string  // ArchGPT2 or ArchLlama
	Vocab          int     // vocab_size
	Hidden         int     // n_embd / hidden_size
	Layers         int     // n_layer / num_hidden_layers
	Heads          int     // n_head / num_attention_heads
	KVHeads        int     // num_key_value_heads (== Heads for GPT-2)
	HeadDim        int     // head_dim; 0 means Hidden/Heads
	Intermediate   int     // n_inner (default 4*Hidden) / intermediate_size
	MaxPositions   int     // n_positions / max_position_embeddings
	Eps            float64 // layer_norm_epsilon / rms_norm_eps
	RopeTheta      float64 // rope_theta (Llama only)
	TiedEmbeddings bool    // tie_word_embeddings: the LM head reuses the token embedding
	Activation     string  // activation_function / hidden_act: "gelu_new" or "silu"
}

// HeadSize is the per-head dimension.
func (c Config) HeadSize() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	return c.Hidden / c.Heads
}

// ErrInvalidConfig is wrapped by every configuration validation failure.
var ErrInvalidConfig = errors.New("models: invalid config")

// ErrUnknownPreset is returned by Preset for a name it does not know.
var ErrUnknownPreset = errors.New("models: unknown preset")

// Validate reports the first inconsistent field, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch c.Arch {
	case ArchGPT2, ArchLlama:
	default:
		return bad("arch %q (want %q or %q)", c.Arch, ArchGPT2, ArchLlama)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"vocab", c.Vocab}, {"hidden", c.Hidden}, {"layers", c.Layers}, {"heads", c.Heads},
		{"kv heads", c.KVHeads}, {"intermediate", c.Intermediate}, {"max positions", c.MaxPositions}} {
		if f.v <= 0 {
			return bad("%s = %d, want > 0", f.name, f.v)
		}
	}
	if c.Heads%c.KVHeads != 0 {
		return bad("heads %d not a multiple of kv heads %d", c.Heads, c.KVHeads)
	}
	if c.HeadDim == 0 && c.Hidden%c.Heads != 0 {
		return bad("hidden %d not a multiple of heads %d", c.Hidden, c.Heads)
	}
	if c.Arch == ArchGPT2 && (c.KVHeads != c.Heads || c.HeadSize()*c.Heads != c.Hidden) {
		return bad("gpt2 needs kv heads == heads and heads*head size == hidden")
	}
	if c.Arch == ArchLlama && (c.HeadSize()%2 != 0 || c.RopeTheta <= 0) {
		return bad("llama needs an even head size (%d) and rope theta > 0 (%g)", c.HeadSize(), c.RopeTheta)
	}
	if c.Eps <= 0 {
		return bad("eps = %g, want > 0", c.Eps)
	}
	switch c.Activation {
	case "gelu_new", "gelu_pytorch_tanh", "silu":
	default:
		return bad("activation %q (supported: gelu_new, gelu_pytorch_tanh, silu)", c.Activation)
	}
	return nil
}

// hfConfig holds the config.json fields of GPT-2 and Llama checkpoints.
type hfConfig struct {
	ModelType string `json:"model_type"`
	VocabSize int    `json:"vocab_size"`

	NEmbd      int      `json:"n_embd"`
	NLayer     int      `json:"n_layer"`
	NHead      int      `json:"n_head"`
	NInner     *int     `json:"n_inner"`
	NPositions int      `json:"n_positions"`
	LNEps      *float64 `json:"layer_norm_epsilon"`
	ActFn      string   `json:"activation_function"`
	ScaleAttn  *bool    `json:"scale_attn_weights"`
	ScaleByIdx bool     `json:"scale_attn_by_inverse_layer_idx"`

	HiddenSize   int      `json:"hidden_size"`
	NumLayers    int      `json:"num_hidden_layers"`
	NumHeads     int      `json:"num_attention_heads"`
	NumKVHeads   int      `json:"num_key_value_heads"`
	HeadDim      int      `json:"head_dim"`
	Intermediate int      `json:"intermediate_size"`
	MaxPos       int      `json:"max_position_embeddings"`
	RMSEps       *float64 `json:"rms_norm_eps"`
	HiddenAct    string   `json:"hidden_act"`
	RopeTheta    *float64 `json:"rope_theta"`
	RopeParams   *struct {
		RopeTheta float64 `json:"rope_theta"`
		RopeType  string  `json:"rope_type"`
	} `json:"rope_parameters"`
	RopeScaling      map[string]any `json:"rope_scaling"`
	AttentionBias    bool           `json:"attention_bias"`
	MLPBias          bool           `json:"mlp_bias"`
	TieWordEmbedding *bool          `json:"tie_word_embeddings"`
}

// LoadConfig reads dir/config.json of a Hugging Face GPT-2 or Llama checkpoint.
func LoadConfig(dir string) (Config, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return Config{}, fmt.Errorf("models: read config: %w", err)
	}
	return ParseConfig(raw)
}

// ParseConfig decodes the contents of a Hugging Face config.json.
func ParseConfig(raw []byte) (Config, error) {
	var h hfConfig
	if err := json.Unmarshal(raw, &h); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	var c Config
	switch h.ModelType {
	case "gpt2":
		if (h.ScaleAttn != nil && !*h.ScaleAttn) || h.ScaleByIdx {
			return Config{}, fmt.Errorf("%w: gpt2 attention must be scaled by 1/sqrt(head size) only", ErrInvalidConfig)
		}
		c = Config{
			Arch: ArchGPT2, Vocab: h.VocabSize, Hidden: h.NEmbd, Layers: h.NLayer, Heads: h.NHead,
			KVHeads: h.NHead, Intermediate: 4 * h.NEmbd, MaxPositions: h.NPositions, Eps: 1e-5,
			TiedEmbeddings: true, Activation: "gelu_new",
		}
		if h.NInner != nil {
			c.Intermediate = *h.NInner
		}
		if h.LNEps != nil {
			c.Eps = *h.LNEps
		}
		if h.ActFn != "" {
			c.Activation = h.ActFn
		}
	case "llama":
		if h.RopeScaling != nil || (h.RopeParams != nil && h.RopeParams.RopeType != "" && h.RopeParams.RopeType != "default") {
			return Config{}, fmt.Errorf("%w: rope scaling is not supported", ErrInvalidConfig)
		}
		if h.AttentionBias || h.MLPBias {
			return Config{}, fmt.Errorf("%w: llama attention/mlp biases are not supported", ErrInvalidConfig)
		}
		c = Config{
			Arch: ArchLlama, Vocab: h.VocabSize, Hidden: h.HiddenSize, Layers: h.NumLayers, Heads: h.NumHeads,
			KVHeads: h.NumKVHeads, HeadDim: h.HeadDim, Intermediate: h.Intermediate, MaxPositions: h.MaxPos,
			Eps: 1e-6, RopeTheta: 10000, TiedEmbeddings: false, Activation: "silu",
		}
		if c.KVHeads == 0 {
			c.KVHeads = c.Heads
		}
		if c.HeadDim*c.Heads == c.Hidden {
			c.HeadDim = 0 // canonical form: derived
		}
		if h.RMSEps != nil {
			c.Eps = *h.RMSEps
		}
		if h.HiddenAct != "" {
			c.Activation = h.HiddenAct
		}
		switch {
		case h.RopeParams != nil && h.RopeParams.RopeTheta > 0:
			c.RopeTheta = h.RopeParams.RopeTheta
		case h.RopeTheta != nil:
			c.RopeTheta = *h.RopeTheta
		}
	default:
		return Config{}, fmt.Errorf("%w: model_type %q (supported: gpt2, llama)", ErrInvalidConfig, h.ModelType)
	}
	if h.TieWordEmbedding != nil {
		c.TiedEmbeddings = *h.TieWordEmbedding
	}
	return c, c.Validate()
}

// presets are the configurations the project trains or replays traces of.
// GPT-style presets other than GPT-2 itself (OPT, NeoX) use the GPT-2
// architecture with the real model's shapes; see Preset.
var presets = map[string]Config{
	"gpt2-tiny": {Arch: ArchGPT2, Vocab: 512, Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, Intermediate: 256,
		MaxPositions: 128, Eps: 1e-5, TiedEmbeddings: true, Activation: "gelu_new"},
	"llama-tiny": {Arch: ArchLlama, Vocab: 512, Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, Intermediate: 176,
		MaxPositions: 128, Eps: 1e-5, RopeTheta: 10000, Activation: "silu"},
	"gpt2-small": {Arch: ArchGPT2, Vocab: 50257, Hidden: 768, Layers: 12, Heads: 12, KVHeads: 12, Intermediate: 3072,
		MaxPositions: 1024, Eps: 1e-5, TiedEmbeddings: true, Activation: "gelu_new"},
	"opt-1.3b": {Arch: ArchGPT2, Vocab: 50272, Hidden: 2048, Layers: 24, Heads: 32, KVHeads: 32, Intermediate: 8192,
		MaxPositions: 2048, Eps: 1e-5, TiedEmbeddings: true, Activation: "gelu_new"},
	"gpt2-xl": {Arch: ArchGPT2, Vocab: 50257, Hidden: 1600, Layers: 48, Heads: 25, KVHeads: 25, Intermediate: 6400,
		MaxPositions: 1024, Eps: 1e-5, TiedEmbeddings: true, Activation: "gelu_new"},
	"llama-1b": {Arch: ArchLlama, Vocab: 128256, Hidden: 2048, Layers: 16, Heads: 32, KVHeads: 8, Intermediate: 8192,
		MaxPositions: 131072, Eps: 1e-5, RopeTheta: 500000, TiedEmbeddings: true, Activation: "silu"},
	"llama-7b": {Arch: ArchLlama, Vocab: 32000, Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 32, Intermediate: 11008,
		MaxPositions: 4096, Eps: 1e-5, RopeTheta: 10000, Activation: "silu"},
	"neox-20b": {Arch: ArchGPT2, Vocab: 50432, Hidden: 6144, Layers: 44, Heads: 64, KVHeads: 64, Intermediate: 24576,
		MaxPositions: 2048, Eps: 1e-5, TiedEmbeddings: false, Activation: "gelu_new"},
}

// Preset returns a named configuration: "gpt2-tiny" and "llama-tiny" (the
// shapes of the test fixtures), "gpt2-small", and the shapes behind the
// recorded traces: "opt-1.3b", "gpt2-xl", "llama-1b" (Llama-3.2-1B),
// "llama-7b" and "neox-20b".
//
// Approximations: OPT-1.3B is built as GPT-2 (OPT uses ReLU, a learned
// position table offset by 2 and pre-LN like GPT-2: the shapes and the
// memory pattern match, the function does not); GPT-NeoX-20B is built as
// GPT-2 with an untied head (NeoX uses parallel attention+MLP and rotary
// embeddings on a quarter of each head: same tensor shapes per block, apart
// from the learned position table GPT-2 adds). Llama-1B omits Llama-3's rope
// scaling (irrelevant to memory).
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("%w %q (known: %v)", ErrUnknownPreset, name, PresetNames())
	}
	return c, nil
}

// PresetNames lists the names Preset accepts, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
