package models

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tiny presets are exactly the fixtures' configurations.
func TestLoadConfigMatchesPresets(t *testing.T) {
	for _, name := range []string{"gpt2-tiny", "llama-tiny"} {
		t.Run(name, func(t *testing.T) {
			cfg, err := LoadConfig(fixtureDir(t, name))
			require.NoError(t, err)
			want, err := Preset(name)
			require.NoError(t, err)
			assert.Equal(t, want, cfg)
		})
	}
}

func TestPresets(t *testing.T) {
	// Parameter counts of the real models (embeddings counted once when tied).
	counts := map[string]int64{
		"gpt2-small": 124_439_808,
		"gpt2-xl":    1_557_611_200,
		"llama-1b":   1_235_814_400,
		"llama-7b":   6_738_415_616,
	}
	for _, name := range PresetNames() {
		cfg, err := Preset(name)
		require.NoError(t, err, name)
		assert.NoError(t, cfg.Validate(), name)
		if want, ok := counts[name]; ok {
			assert.Equal(t, want, cfg.ParamCount(), name)
		}
	}
	_, err := Preset("gpt5")
	assert.ErrorIs(t, err, ErrUnknownPreset)
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		json string
		want Config
		err  error
	}{
		{"gpt2 defaults", `{"model_type":"gpt2","vocab_size":100,"n_embd":32,"n_layer":1,"n_head":4,"n_positions":64}`,
			Config{Arch: ArchGPT2, Vocab: 100, Hidden: 32, Layers: 1, Heads: 4, KVHeads: 4, Intermediate: 128,
				MaxPositions: 64, Eps: 1e-5, TiedEmbeddings: true, Activation: "gelu_new"}, nil},
		{"llama legacy rope_theta, head_dim", `{"model_type":"llama","vocab_size":100,"hidden_size":32,"num_hidden_layers":1,
			"num_attention_heads":4,"num_key_value_heads":1,"head_dim":16,"intermediate_size":64,"max_position_embeddings":64,
			"rms_norm_eps":1e-6,"rope_theta":500000,"tie_word_embeddings":true}`,
			Config{Arch: ArchLlama, Vocab: 100, Hidden: 32, Layers: 1, Heads: 4, KVHeads: 1, HeadDim: 16, Intermediate: 64,
				MaxPositions: 64, Eps: 1e-6, RopeTheta: 500000, TiedEmbeddings: true, Activation: "silu"}, nil},
		{"rope scaling", `{"model_type":"llama","rope_scaling":{"rope_type":"llama3"}}`, Config{}, ErrInvalidConfig},
		{"gpt2 layer-scaled attention", `{"model_type":"gpt2","scale_attn_by_inverse_layer_idx":true}`, Config{}, ErrInvalidConfig},
		{"unknown model", `{"model_type":"bert"}`, Config{}, ErrInvalidConfig},
		{"bad heads", `{"model_type":"gpt2","vocab_size":100,"n_embd":30,"n_layer":1,"n_head":4,"n_positions":64}`, Config{}, ErrInvalidConfig},
		{"not json", `{`, Config{}, ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.json))
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
