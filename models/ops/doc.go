// Package ops holds the float32 Gorgonia ops the transformer models need and
// Gorgonia lacks: embedding gather and its scatter-add gradient, learned
// positions, LayerNorm, RMSNorm, tanh-GELU, SiLU, rotary position embedding
// (Hugging Face rotate_half convention), causal (grouped-query) attention,
// dense matrix products with transposition flags, and fused softmax
// cross-entropy with the Hugging Face shift-by-one labels.
//
// Each op is a small kernel (forward computation plus, for differentiable
// ops, its gradients as graph nodes built from other kernels of this
// package) wrapped by one generic adapter that implements gorgonia.Op,
// gorgonia.SDOp and gorgonia.UsePreallocDoer. The backward pass is therefore
// symbolic (gorgonia.Grad), ops never keep hidden state between forward and
// backward, and every result can be written into a buffer the executor
// allocated. Kernels take and produce contiguous row-major tensors; the
// activations are 2-D [tokens, features] with token index b*Seq+s.
package ops
