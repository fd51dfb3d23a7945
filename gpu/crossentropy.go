package gpu

// IgnoreIndex is the target value whose rows the loss skips (Hugging Face's -100).
const IgnoreIndex int32 = -100

// CrossEntropy queues the fused softmax cross-entropy of logits (rows, v) against targets: loss[r]
// = logsumexp(logits[r]) - logits[r, target[r]], 0 for targets equal to IgnoreIndex; lse receives
// logsumexp per row for the backward pass. Mean it with Sum and Scale by 1/counted rows.
func (d *Device) CrossEntropy(loss, lse, logits *Tensor, targets *Ids) error {
	rows, v, err := lastAxis("CrossEntropy", logits)
	if err != nil {
		return err
	}
	if err := ceShapes("CrossEntropy", rows, targets, loss, lse); err != nil {
		return err
	}
	return d.launch("cross_entropy_fwd_f32", rows, rowBlock(v), loss.ptr, lse.ptr, logits.ptr, targets.ptr, rows, v,
		IgnoreIndex)
}

// CrossEntropyBackward queues dlogits = (softmax(logits) - onehot(target)) * dloss * scale, zero on
// ignored rows; dloss is the upstream gradient of the reduced loss (a one-element device tensor),
// scale is 1/counted rows for a mean.
func (d *Device) CrossEntropyBackward(dlogits, logits, lse *Tensor, targets *Ids, dloss *Tensor, scale float32) error {
	rows, v, err := lastAxis("CrossEntropyBackward", dlogits, logits)
	if err != nil {
		return err
	}
	if err := ceShapes("CrossEntropyBackward", rows, targets, lse); err != nil {
		return err
	}
	if dloss.Len() != 1 {
		return shapeError("CrossEntropyBackward", "dloss %v must have one element", dloss.shape)
	}
	return d.launch("cross_entropy_bwd_f32", d.elementGrid(rows*v), elementBlock, dlogits.ptr, logits.ptr, lse.ptr,
		targets.ptr, dloss.ptr, rows, v, IgnoreIndex, scale)
}

func ceShapes(op string, rows int, targets *Ids, perRow ...*Tensor) error {
	if targets.n != rows {
		return shapeError(op, "%d targets for %d rows", targets.n, rows)
	}
	for _, t := range perRow {
		if err := checkVec(op, t, rows); err != nil {
			return err
		}
	}
	return nil
}
