// Package train fine-tunes the transformers of package models with every buffer in memory from an
// allocator (gmlake's in the examples), so the allocator sees the true allocation pattern of training.
//
// A Trainer moves the model's weights into allocator memory (as a GPU trainer moves them to the
// device), builds one graph per (batch, sequence length) shape on first use — all binding the same
// weight tensors, so variable sequence lengths cost one graph build per bucket — and runs each with
// a vm.Machine (package train/vm), which frees every activation, gradient and temporary at its last
// use. Per step: the token ids are copied into allocator memory, the machine runs forward and
// backward (with per-block recomputation and activation offload when switched on), and AdamW with
// global-norm gradient clipping updates the trainable tensors in place; its moments also live in
// allocator memory. With LoRA (models.LoRA) only the adapters are trainable and the base is frozen.
//
// A Recorder between the Trainer and the allocator writes the run's allocation trace in the format
// of ../shared/traces (`a ID SIZE STREAM`, `f ID`, `i N` at each step), which package bench replays
// through other allocators.
//
// An ImageTrainer does the same for a ResNet (models.ResNetWeights): one graph per input shape,
// so multi-scale training (Scales picks an image size per step) builds one graph per size. Its
// synthetic task is ColorTask, classes told apart by their mean color under per-pixel noise.
//
// Counting is the synthetic task: sequences that count through an alphabet with a random start and
// stride, learnable by a tiny model in a few hundred steps, with a known loss floor.
package train
