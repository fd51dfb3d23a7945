package models

import "errors"

// Build creates the graph of w's model for one (Batch, Seq) shape. Its weight
// nodes bind the tensors of w itself.
func Build(w *Weights, opts BuildOptions) (*Graph, error) {
	return nil, errors.New("models: Build is not implemented yet")
}
