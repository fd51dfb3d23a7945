package memory

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	"gorgonia.org/tensor"
)

// Reclaimer is a TensorEngine for Gorgonia's TapeMachine that gives back the memory the machine and
// its solver drop without freeing. Pass it to gorgonia.WithEngine; after each training step (RunAll,
// the solver's Step, the machine's Reset) call Reclaim with the graph, the machine and the solver:
//
//	r, _ := memory.NewReclaimer(e)
//	m := gorgonia.NewTapeMachine(g, gorgonia.WithEngine(r), gorgonia.BindDualValues(learnables...))
//	for range steps {
//		m.RunAll(); solver.Step(gorgonia.NodesToValueGrads(learnables)); m.Reset()
//		r.Reclaim(g, m, solver)
//	}
//
// Reclaim frees every block this engine allocated that no tensor reachable from its roots uses: it
// walks the roots' fields (through pointers, interfaces, slices, maps and structs, unexported ones
// included, read only), and a block is kept when any tensor, tensor.Memory or slice it finds
// points into it. Nothing else is freed: a Dense keeps only the address of its memory, so a
// finalizer cannot know when a block dies, but the graph (node values, gradients), the machine
// (its registers) and the solver (its moments) are everything that holds a step's tensors.
//
// The rule for the caller: a tensor this engine allocated (a node's value, a result computed from
// one) is valid until the next Reclaim, unless it is reachable from the roots passed to that
// Reclaim. Keep a value across steps by passing what holds it as a root, or by copying it to the Go
// heap. A root whose tensors hide behind a closure or a channel is not seen.
//
// Memory the caller allocated with another engine (the TensorEngine the Reclaimer was made from
// included) is never freed by Reclaim.
type Reclaimer struct {
	*TensorEngine
	mu     sync.Mutex
	blocks map[uintptr]*Block // blocks this engine allocated and has not freed, by address
	poison bool               // tests: fill a reclaimed block with 0xFF (a NaN in every float) first
}

// ReclaimStats says what one Reclaim did.
type ReclaimStats struct {
	Kept, Freed           int   // blocks
	KeptBytes, FreedBytes int64 // bytes asked for
}

// NewReclaimer returns an engine over e's Allocator whose allocations Reclaim may free.
func NewReclaimer(e *TensorEngine) (*Reclaimer, error) {
	if e == nil {
		return nil, fmt.Errorf("memory: new reclaimer over a nil engine: %w", ErrForeignMemory)
	}
	r := &Reclaimer{blocks: make(map[uintptr]*Block)}
	r.TensorEngine = &TensorEngine{alloc: e.alloc}
	r.TensorEngine.self = r
	return r, nil
}

var (
	_ tensor.Engine       = (*Reclaimer)(nil)
	_ tensor.NonStdEngine = (*Reclaimer)(nil)
)

// Alloc is TensorEngine.Alloc, remembered for Reclaim.
func (r *Reclaimer) Alloc(size int64) (tensor.Memory, error) {
	mem, err := r.TensorEngine.Alloc(size)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.blocks[mem.Uintptr()] = mem.(*Block)
	r.mu.Unlock()
	return mem, nil
}

// Free frees a block now (see Allocator.Free); Reclaim then no longer considers it. A block of this
// engine named by another tensor.Memory at its address (a Dense over it) is freed through its
// handle, so that it is freed once.
func (r *Reclaimer) Free(mem tensor.Memory, size int64) error {
	if isNil(mem) {
		return r.TensorEngine.Free(mem, size)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.blocks[mem.Uintptr()]
	if b == nil {
		return r.TensorEngine.Free(mem, size)
	}
	if h, ok := mem.(*Block); ok && h != b {
		return r.TensorEngine.Free(mem, size) // a stale handle: the Allocator refuses it
	}
	if err := r.alloc.Free(b, size); err != nil {
		return err
	}
	delete(r.blocks, b.addr)
	return nil
}

// Live is the number of blocks the engine has allocated and not freed.
func (r *Reclaimer) Live() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.blocks)
}

// Reclaim frees every block of this engine that no tensor reachable from roots uses. Call it
// between steps, when nothing runs on the engine; errors are the Allocator's.
func (r *Reclaimer) Reclaim(roots ...any) (ReclaimStats, error) {
	w := walker{seen: make(map[visitKey]bool)}
	if err := w.walk(roots); err != nil {
		return ReclaimStats{}, err // nothing is freed
	}
	slices.Sort(w.addrs)
	r.mu.Lock()
	defer r.mu.Unlock()
	var st ReclaimStats
	var free []*Block
	for addr, b := range r.blocks {
		size := int64(b.MemSize())
		// The first address found at or above the block's start tells whether one lies inside it.
		i, _ := slices.BinarySearch(w.addrs, addr)
		if i < len(w.addrs) && w.addrs[i] < addr+uintptr(size) {
			st.Kept++
			st.KeptBytes += size
			continue
		}
		free = append(free, b)
	}
	slices.SortFunc(free, func(a, b *Block) int { return cmp.Compare(a.addr, b.addr) }) // a fixed order
	for _, b := range free {
		size := int64(b.MemSize())
		if r.poison {
			fillBytes(bytesOf(b.addr, uintptr(size)), 0xFF)
		}
		if err := r.alloc.Free(b, size); err != nil {
			return st, fmt.Errorf("memory: reclaim: %w", err)
		}
		delete(r.blocks, b.addr)
		st.Freed++
		st.FreedBytes += size
	}
	return st, nil
}

func fillBytes(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// walker finds every address a value graph points at through tensors and slices.
type walker struct {
	seen  map[visitKey]bool
	addrs []uintptr
}

// walk visits every root. A value the walk cannot read fails it, so that nothing is freed on a
// partial view.
func (w *walker) walk(roots []any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("memory: reclaim: %w: %v", ErrUnwalkable, p)
		}
	}()
	for _, root := range roots {
		if root != nil {
			w.visit(reflect.ValueOf(root))
		}
	}
	return nil
}

type visitKey struct {
	p uintptr
	t reflect.Type
}

var (
	memoryType = reflect.TypeFor[tensor.Memory]()
	engineType = reflect.TypeFor[tensor.Engine]()
	denseType  = reflect.TypeFor[*tensor.Dense]()
	blockType  = reflect.TypeFor[*Block]()
	// prunedTypes caches which types cannot lead to memory (shared by every walk, guarded by
	// prunedMu).
	prunedTypes = map[reflect.Type]bool{}
	prunedMu    sync.Mutex
)

// visit records the memory v points at and walks on. v must be readable (CanInterface) or
// addressable.
func (w *walker) visit(v reflect.Value) {
	if !v.IsValid() {
		return
	}
	k := kindOf(v.Type())
	if k.noMemory || k.engine {
		return // an engine's bookkeeping (this one's included) is not a user of memory
	}
	v = readable(v)
	t := v.Type()
	if k.memory {
		w.record(v)
		if k.leaf {
			return // nothing inside leads to other memory
		}
		// Walk on: a type may be Memory through an embedded field and hold more (Gorgonia's dual
		// values embed their value and hold the gradient beside it).
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || w.once(v.Pointer(), t) {
			return
		}
		w.visit(v.Elem())
	case reflect.Interface:
		if !v.IsNil() {
			w.visit(reflect.ValueOf(v.Interface()))
		}
	case reflect.Struct:
		v = addressable(v)
		for i := range v.NumField() {
			w.visit(v.Field(i))
		}
	case reflect.Array:
		v = addressable(v)
		for i := range v.Len() {
			w.visit(v.Index(i))
		}
	case reflect.Slice:
		if v.IsNil() || v.Len() == 0 {
			return
		}
		if kindOf(t.Elem()).noMemory {
			w.addrs = append(w.addrs, v.Pointer()) // plain data: a []float32 of a tensor's memory
			return
		}
		if w.once(v.Pointer(), t) {
			return
		}
		for i := range v.Len() {
			w.visit(v.Index(i))
		}
	case reflect.UnsafePointer:
		w.addrs = append(w.addrs, v.Pointer())
	case reflect.Map:
		if v.IsNil() || w.once(v.Pointer(), t) {
			return
		}
		for it := v.MapRange(); it.Next(); {
			w.visit(it.Key())
			w.visit(it.Value())
		}
	}
}

// once reports whether (p, t) was visited before, marking it visited.
func (w *walker) once(p uintptr, t reflect.Type) bool {
	k := visitKey{p, t}
	if w.seen[k] {
		return true
	}
	w.seen[k] = true
	return false
}

// record notes the address of a tensor.Memory (a Dense, a Block, a Gorgonia scalar).
func (w *walker) record(v reflect.Value) {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return
	}
	m, ok := v.Interface().(tensor.Memory)
	if !ok {
		return
	}
	defer func() { _ = recover() }() // an empty Dense has no first byte to take the address of
	if m.MemSize() > 0 {
		w.addrs = append(w.addrs, m.Uintptr())
	}
}

// readable returns v itself, or for a value reached through an unexported field (addressable but
// read-only) the same memory viewed as exported, so that it can be read.
func readable(v reflect.Value) reflect.Value {
	if v.CanInterface() || !v.CanAddr() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// addressable returns v, copied into a new variable if it is not addressable, so that its fields
// can be read through readable.
func addressable(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return v
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return c
}

// typeKind is what the walk needs to know of a type, worked out once per type.
type typeKind struct {
	noMemory bool // cannot point at memory: numbers, strings, functions, channels, aggregates of them
	engine   bool // a tensor.Engine (not an interface type)
	memory   bool // a tensor.Memory (not an interface type)
	leaf     bool // a tensor.Memory with nothing else inside: *tensor.Dense, *Block
}

var (
	kindsMu sync.Mutex
	kinds   = map[reflect.Type]typeKind{}
)

func kindOf(t reflect.Type) typeKind {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	return kindLocked(t)
}

func kindLocked(t reflect.Type) typeKind {
	if k, ok := kinds[t]; ok {
		return k
	}
	kinds[t] = typeKind{} // in progress: a recursive type may hold memory
	var k typeKind
	if t.Kind() != reflect.Interface {
		k.engine = t.Implements(engineType)
		k.memory = t.Implements(memoryType)
		k.leaf = t == denseType || t == blockType
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map, reflect.UnsafePointer:
	case reflect.Array:
		k.noMemory = t.Len() == 0 || kindLocked(t.Elem()).noMemory
	case reflect.Struct:
		k.noMemory = true
		for i := range t.NumField() {
			if !kindLocked(t.Field(i).Type).noMemory {
				k.noMemory = false
				break
			}
		}
	default:
		k.noMemory = true
	}
	k.noMemory = k.noMemory && !k.memory
	kinds[t] = k
	return k
}
