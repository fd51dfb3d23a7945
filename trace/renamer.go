package trace

// renamer gives allocations new ids 0, 1, 2, ... in order; a free takes the id of the latest
// allocation of its old id.
type renamer struct {
	ids  map[int64]int64
	next int64
}

func (r *renamer) rename(ev Event) Event {
	switch ev.Kind {
	case Alloc:
		r.ids[ev.ID] = r.next
		ev.ID = r.next
		r.next++
	case Free:
		ev.ID = r.ids[ev.ID]
	}
	return ev
}
