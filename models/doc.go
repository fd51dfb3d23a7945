// Package models builds GPT-2 and Llama decoder-only transformers as float32
// Gorgonia graphs, with their loss and symbolic gradients, for fine-tuning on
// gmlake memory.
//
// The pieces:
//
//   - Config describes a model, read from a Hugging Face config.json
//     (LoadConfig) or a named preset (Preset) for the shapes behind the
//     project's traces.
//   - Weights holds parameters under their Hugging Face names, initialized
//     (InitWeights) or read from model.safetensors (LoadWeights), allocated
//     through a caller-supplied tensor.Engine so they can live in gmlake memory.
//   - Build turns Weights into a Graph for one (batch, sequence) shape:
//     forward pass, HF-convention loss (labels are the ids shifted by one,
//     mean over predicted tokens), and gorgonia.Grad gradients of the
//     trainable parameters (all base weights, or LoRA adapters with the base
//     frozen). Graphs of different shapes share the Weights tensors, so a
//     trainer keeps one graph per sequence-length bucket.
//
// Every layer Gorgonia lacks (embedding gather, LayerNorm, RMSNorm, GELU,
// SiLU, RoPE, causal attention, fused softmax cross-entropy, and the dense
// projections themselves) is an op of package models/ops, each with its
// backward pass expressed as further ops, so the backward graph is explicit
// and every node's value can be computed into a caller-provided buffer
// (gorgonia.UsePreallocDoer). Activations are 2-D [Batch*Seq, features]
// row-major throughout, which keeps every op's input contiguous.
//
// Graph documents how an executor tells forward from backward nodes and which
// forward nodes belong to which transformer block (for recomputation and
// offload).
package models
