package models

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
)

// Adapter tensor name suffixes, appended to a projection's module path.
const (
	loraA = ".lora_A.weight" // [in, rank]
	loraB = ".lora_B.weight" // [rank, out]
)

// projection is one dense layer of a block that LoRA can target.
type projection struct {
	module  string // e.g. "model.layers.0.self_attn.q_proj"
	in, out int
}

// projections lists every targetable projection of cfg.
func projections(cfg Config) []projection {
	var ps []projection
	for _, s := range paramSpecs(cfg) {
		module, ok := strings.CutSuffix(s.name, ".weight")
		if !ok || len(s.shape) != 2 || !isProjection(module) {
			continue
		}
		p := projection{module: module, in: s.shape[1], out: s.shape[0]} // nn.Linear [out, in]
		if cfg.Arch == ArchGPT2 {
			p.in, p.out = s.shape[0], s.shape[1] // Conv1D [in, out]
		}
		ps = append(ps, p)
	}
	return ps
}

func isProjection(module string) bool {
	return strings.Contains(module, ".attn.") || strings.Contains(module, ".self_attn.") || strings.Contains(module, ".mlp.")
}

// targetAliases expands Llama's short target names.
var targetAliases = map[string]string{
	"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
	"gate": "gate_proj", "up": "up_proj", "down": "down_proj",
}

// matches reports whether the target names the module (by dotted suffix).
func matches(target, module string) bool {
	if alias, ok := targetAliases[target]; ok {
		target = alias
	}
	return strings.HasSuffix(module, "."+target)
}

// addAdapters marks the targeted projections, creates their adapter tensors
// in w when absent, binds them, and returns the adapter names.
func (b *builder) addAdapters() ([]string, error) {
	l := b.opts.LoRA
	if l.Rank <= 0 || len(l.Targets) == 0 {
		return nil, fmt.Errorf("%w: LoRA rank %d, %d targets", ErrInvalidConfig, l.Rank, len(l.Targets))
	}
	ps := projections(b.cfg)
	b.lora = make(map[string]bool)
	for _, t := range l.Targets {
		found := false
		for _, p := range ps {
			if matches(t, p.module) {
				b.lora[p.module], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %q", ErrUnknownTarget, t)
		}
	}
	rng := rand.New(rand.NewSource(l.Seed))
	var names []string
	for _, p := range ps { // fixed order, so the seed gives the same adapters
		if !b.lora[p.module] {
			continue
		}
		for _, a := range []struct {
			suffix string
			shape  []int
		}{{loraA, []int{p.in, l.Rank}}, {loraB, []int{l.Rank, p.out}}} {
			name := p.module + a.suffix
			t, ok := b.w.Tensors[name]
			if !ok {
				var err error
				if t, err = newTensor(b.opts.Engine, a.shape...); err != nil {
					return nil, err
				}
				data := float32s(t)
				clear(data)
				if a.suffix == loraA { // kaiming-uniform(a=√5) as peft does: U(-1/√in, 1/√in)
					bound := 1 / math.Sqrt(float64(p.in))
					for i := range data {
						data[i] = float32((rng.Float64()*2 - 1) * bound)
					}
				}
				b.w.Tensors[name] = t
			} else if !sameShape(t.Shape(), a.shape) {
				return nil, fmt.Errorf("%w: existing adapter %s has shape %v, LoRA rank %d wants %v",
					ErrInvalidConfig, name, t.Shape(), l.Rank, a.shape)
			}
			b.nodes[name] = bindTensor(b.graph.G, name, t)
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}
