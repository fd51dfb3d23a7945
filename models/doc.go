// Package models builds GPT-2 and Llama decoder-only transformers and ResNet
// image classifiers as float32 Gorgonia graphs, with their loss and symbolic
// gradients, for training on gmlake memory.
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
//
// # ResNets
//
// ResNetConfig describes a ResNet as torchvision builds it (basic or
// bottleneck blocks, any depth and width; ResNetPreset has ResNet-18/34/50 with
// torchvision's parameter counts), InitResNet initializes its ResNetWeights,
// and BuildResNet makes a ResNetGraph for one (batch, height, width): images
// NCHW, integer labels, mean softmax cross-entropy and the gradients of every
// parameter. Multi-scale training keeps one graph per image size, all binding
// the same weights. Its layers are models/ops ops too: Conv2d (whose backward
// passes are the convolution's backward-data and backward-filter, so a GPU
// executor maps each to one cuDNN call; on the CPU they run through Gorgonia's
// im2col and col2im), BatchNorm with the batch's statistics, ReLU, max and
// average pooling, a global average pool, the linear head (MatMul, AddBias) and
// ClassCrossEntropy. Gorgonia's own BatchNorm, pooling and global average pool
// are not used: its BatchNorm reads its output buffer and keeps statistics in
// op state on the Go heap, its max pool keeps its argmax mask there, its average
// pool divides by the input width and its global average pool has no gradient
// (the ops' tests pin each difference).
package models
