package graphexec

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/gmlake/gmlake/train/plan"
)

// analyse compiles g's program (package plan, shared with train/vm): every node in topological
// order, inputs as load steps because every input must be brought to the device, then the
// configured rewrites. Steps nobody reads are pruned only with forward roots: the plain program
// runs every op node.
func analyse(g *gorgonia.ExprGraph, cfg *config) (*plan.Graph, []plan.Step, error) {
	gr, err := plan.Analyse(g, plan.Spec{Outputs: cfg.outputs, Forward: cfg.forward,
		BlockOf: cfg.blockOf, BlockInputs: cfg.blockInputs})
	if err != nil {
		return nil, nil, fmt.Errorf("graphexec: %w", err)
	}
	if (cfg.recompute || cfg.offload) && (len(cfg.forward) == 0 || len(cfg.blockOf) == 0) {
		return nil, nil, fmt.Errorf("%w: recompute and offload need forward roots and blocks", ErrUnsupported)
	}
	order := make([]int, gr.Len())
	for i := range order {
		order[i] = i
	}
	gather := make([][]int, len(cfg.gathered))
	for k, unit := range cfg.gathered {
		for _, n := range unit {
			i, ok := gr.Index[n.ID()]
			if !ok || gr.Nodes[i] != n || !gr.Leaf[i] {
				return nil, nil, fmt.Errorf("%w: gathered node %v is not an input of the graph", ErrUnsupported, n)
			}
			gather[k] = append(gather[k], i)
		}
	}
	if len(gather) > 0 && cfg.gatherer == nil {
		return nil, nil, fmt.Errorf("%w: gathered nodes without a Gatherer", ErrUnsupported)
	}
	prog := gr.CompileGathered(order, plan.Options{Recompute: cfg.recompute, Offload: cfg.offload, Prune: len(cfg.forward) > 0}, gather)
	return gr, prog, nil
}
