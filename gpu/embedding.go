package gpu

// EmbeddingGather queues out[k, :] = table[ids[k], :] for a (vocab, dim) table and out of
// (len(ids), dim) (any shape with that many elements).
func (d *Device) EmbeddingGather(out, table *Tensor, ids *Ids) error {
	vocab, dim, err := tableShape("EmbeddingGather", table, out, ids)
	if err != nil {
		return err
	}
	return d.launch("embedding_gather_f32", d.elementGrid(ids.n*dim), elementBlock, out.ptr, table.ptr, ids.ptr,
		ids.n, dim, vocab)
}

// EmbeddingScatterAdd queues dtable[ids[k], :] += dy[k, :], the gradient of EmbeddingGather
// (dtable is accumulated into: zero it first for a fresh gradient).
func (d *Device) EmbeddingScatterAdd(dtable *Tensor, ids *Ids, dy *Tensor) error {
	vocab, dim, err := tableShape("EmbeddingScatterAdd", dtable, dy, ids)
	if err != nil {
		return err
	}
	return d.launch("embedding_scatter_add_f32", d.elementGrid(ids.n*dim), elementBlock, dtable.ptr, ids.ptr,
		dy.ptr, ids.n, dim, vocab)
}

func tableShape(op string, table, rows *Tensor, ids *Ids) (vocab, dim int, err error) {
	if len(table.shape) != 2 || !table.Contiguous() || !rows.Contiguous() {
		return 0, 0, shapeError(op, "table %v must be a contiguous (vocab, dim) matrix", table.shape)
	}
	vocab, dim = table.shape[0], table.shape[1]
	if rows.Len() != ids.n*dim {
		return 0, 0, shapeError(op, "%d ids of %d values need %d elements, got %v", ids.n, dim, ids.n*dim, rows.shape)
	}
	return vocab, dim, nil
}
