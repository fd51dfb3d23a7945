package models_test

import (
	"fmt"

	"github.com/gmlake/gmlake/models"
	"gorgonia.org/gorgonia"
)

// Build a LoRA fine-tuning graph for a tiny Llama and run one forward and
// backward pass with a stock TapeMachine.
func Example() {
	cfg, err := models.Preset("llama-tiny")
	if err != nil {
		panic(err)
	}
	w, err := models.InitWeights(cfg, 1, nil) // nil engine: Go heap
	if err != nil {
		panic(err)
	}
	g, err := models.Build(w, models.BuildOptions{Batch: 1, Seq: 4,
		LoRA: &models.LoRA{Rank: 2, Alpha: 4, Targets: []string{"q", "v"}}})
	if err != nil {
		panic(err)
	}
	if err := g.SetIDs([]int{5, 17, 42, 7}); err != nil {
		panic(err)
	}
	m := gorgonia.NewTapeMachine(g.G)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Println("logits", g.Logits.Shape())
	fmt.Println("trainable", len(g.Params), "frozen", len(g.Frozen))
	fmt.Println(g.Names[0], g.Grads[0].Shape())
	// Output:
	// logits (1, 4, 512)
	// trainable 8 frozen 21
	// model.layers.0.self_attn.q_proj.lora_A.weight (64, 2)
}
