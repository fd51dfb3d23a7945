package reliability

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// ProgramOptions tune RunProgram.
type ProgramOptions struct {
	// MultiFault lets a fault be armed while another is pending, so that one request can meet two
	// (a failure and then the failure of its rollback). Off: at most one fault is pending at once.
	MultiFault bool
	// OnOp, if set, is called after each operation with its description, its result and the
	// harness it ran on.
	OnOp func(desc string, err error, h *Harness)
}

// programG is the granularity programs run at: CUDA's 2 MiB, so the default thresholds apply.
const programG = sim.DefaultGranularity

// RecordSize is the number of bytes one operation of a program takes.
const RecordSize = 3

// RunProgram decodes prog and runs it on a fresh Harness, verifying after every operation, then
// closes the engine and checks that the driver holds nothing; at most maxProgramOps operations run.
// It returns the number of operations verified and the first violation: an ErrViolation or
// ErrLeak error naming the operation (a refused request is not a violation when the refusal is the
// right one).
//
// The first byte picks the set-up: capacity (32 or 96 chunks), stitch budget (4 views or the
// default), events: complete after 0 to 3 queries, or (bits 4 and 5) only when the program says so,
// (bit 6) handles of four chunks (stitch.WithHandleSize: a block may share a handle with others,
// and a stitch map the tail of one), and (bit 7) PyTorch's
// 1 MiB small-pool threshold instead of the default 256 KiB, so that the medium size class lands in
// the small pool's pages. Then each record of three bytes (op, a, b) is one
// operation; v = a<<8|b. By op%16: 0-3 alloc on stream 0, 4 on stream 1, 5 on stream 2, with the
// size class op/16 (small, medium, whole chunks, odd large, big, zero, beyond capacity); 6-9 free
// the live block v%live; 10 EmptyCache; 11 Reset (when a < 16, else a free); 12 fail the
// (1+b%3)-th next call of kind a%NumCallKinds; 13 a bad free (unaligned interior pointer, double free,
// wrong size, size zero); 14 by op/16: 0-3 complete every event, 4-7 complete the v%n-th of the n
// events the driver holds (and the earlier ones of its stream), 8-11 MarkIteration, 12-15
// MarkIteration and replay the last iteration (the allocs and frees between the two marks before,
// at most maxScript of them, with fresh IDs, each verified), so that iterations of one shape recur
// and the engine's memos are followed (and left, when a fault or a reset intervened); 15 alloc on
// stream 1.
func RunProgram(prog []byte, opts ProgramOptions) (int, error) {
	if len(prog) == 0 {
		return 0, nil
	}
	setup := prog[0]
	capacity := uint64(32) * programG
	if setup&1 != 0 {
		capacity = 96 * programG
	}
	events := sim.WithEventDelay(int(setup>>2) % 4)
	if setup&0x30 == 0x30 {
		events = sim.WithManualEvents()
	}
	cfg := Config{Capacity: capacity, Granularity: programG, SimOptions: []sim.Option{events}}
	if setup&2 != 0 {
		cfg.EngineOptions = []stitch.Option{stitch.WithStitchBudget(4, 0)}
	}
	if setup&0x40 != 0 {
		cfg.EngineOptions = append(cfg.EngineOptions, stitch.WithHandleSize(4*programG))
	}
	if setup&0x80 != 0 {
		cfg.EngineOptions = append(cfg.EngineOptions, stitch.WithSmallThreshold(1<<20))
	}
	h, err := NewHarness(cfg)
	if err != nil {
		return 0, fmt.Errorf("%w: new engine: %w", ErrViolation, err)
	}
	p := &program{h: h, opts: opts, capacity: capacity}
	ops := 0
	for i := 1; i+RecordSize <= len(prog) && ops < maxProgramOps; i += RecordSize {
		desc, err := p.step(prog[i], prog[i+1], prog[i+2])
		if err == nil {
			err = h.Verify()
		}
		ops += p.replayed
		p.replayed = 0
		if opts.OnOp != nil {
			if f := h.Tracker.TakeFailures(); len(f) > 0 {
				desc += fmt.Sprintf(" [driver failed: %s]", strings.Join(f, "; "))
			}
			opts.OnOp(desc, err, h)
		}
		if err != nil {
			_ = h.Close()
			return ops, fmt.Errorf("operation %d (%s): %w", (i-1)/RecordSize, desc, err)
		}
		ops++
	}
	h.Driver.ClearFaults()
	if err := h.Close(); err != nil {
		return ops, fmt.Errorf("%w: close: %w", ErrViolation, err)
	}
	return ops, h.Leaks()
}

// program is the state of a running program.
type program struct {
	h        *Harness
	opts     ProgramOptions
	capacity uint64
	nextID   int64
	ids      []int64 // live IDs, in allocation order (with holes filled by swaps)
	freed    []Block // recently freed blocks, for double frees
	faulted  bool    // a fault was injected: the driver's error is a valid refusal from now on
	pending  stitch.CallKind
	at       uint64 // the pending fault fires at this call of kind pending

	script   []scriptOp // the allocs and frees since the last mark
	last     []scriptOp // those of the iteration before (what a replay repeats)
	replayed int        // operations a replay ran and verified in the current step
}

// scriptOp is an alloc (size > 0) or a free of an iteration, for replays.
type scriptOp struct {
	id     int64 // the block allocated or freed
	size   uint64
	stream stitch.Stream
}

// maxScript bounds the operations of an iteration a replay repeats.
const maxScript = 64

// maxProgramOps bounds the operations a program runs and verifies, replayed ones included; the
// records past it are not run. Each operation is verified whole (Harness.Verify), so a long input
// of replays (thousands of records each replaying an iteration) would take seconds, and the fuzzer
// counts a worker that long silent as hung.
const maxProgramOps = 4096

func (p *program) step(op, a, b byte) (string, error) {
	v := uint64(a)<<8 | uint64(b)
	switch code := op % 16; {
	case code <= 5 || code == 15:
		s := stitch.Stream(0)
		switch code {
		case 4, 15:
			s = 1
		case 5:
			s = 2
		}
		return p.alloc(op/16, v, s)
	case code <= 9 || code == 11 && a >= 16:
		return p.free(v)
	case code == 10:
		return "empty cache", p.refused(p.h.Apply(Op{Kind: OpEmptyCache}))
	case code == 11:
		p.ids = p.ids[:0]
		return "reset", p.refused(p.h.Apply(Op{Kind: OpReset}))
	case code == 12:
		kind := stitch.CallKind(a) % stitch.NumCallKinds
		if !p.opts.MultiFault && p.faulted && p.h.Driver.Calls()[p.pending] < p.at {
			return "no fault (one pending)", nil
		}
		n := 1 + uint64(b%3)
		p.faulted, p.pending, p.at = true, kind, p.h.Driver.Calls()[kind]+n
		p.h.Driver.FailNth(kind, int(n), nil)
		return fmt.Sprintf("fail %s #%d", kind, n), nil
	case code == 13:
		return p.badFree(a, v)
	case op/16 >= 12:
		return p.replay()
	case op/16 >= 8:
		return "mark", p.mark()
	case op/16 >= 4:
		return p.completeOne(v)
	default:
		p.h.Driver.CompleteEvents()
		return "complete events", nil
	}
}

// completeOne completes the v-th event the driver holds (and the earlier ones of its stream).
func (p *program) completeOne(v uint64) (string, error) {
	evs := p.h.Driver.Events()
	if len(evs) == 0 {
		return "complete an event (none)", nil
	}
	ev := evs[v%uint64(len(evs))]
	if err := p.h.Driver.CompleteEvent(ev.Event); err != nil {
		return "complete an event", fmt.Errorf("%w: %w", ErrHarness, err)
	}
	return fmt.Sprintf("complete event %d of stream %d", ev.Event, ev.Stream), nil
}

// mark begins an iteration: the script of the one that ends becomes the one a replay repeats
// (unless it was empty: two marks in a row).
func (p *program) mark() error {
	if len(p.script) > 0 {
		p.last, p.script = p.script, nil
	}
	return p.h.Apply(Op{Kind: OpMark})
}

// replay marks an iteration and repeats the allocs and frees of the last one with fresh IDs,
// verifying after each; a free of a block the last iteration did not allocate, or that is no
// longer live (a reset came in between, or its allocation was refused), is left out.
func (p *program) replay() (string, error) {
	if err := p.mark(); err != nil {
		return "mark and replay", err
	}
	script := p.last
	desc := fmt.Sprintf("mark and replay %d ops", len(script))
	fresh := map[int64]int64{}
	for k, so := range script {
		var sub string
		var err error
		if so.size > 0 {
			sub, err = p.allocSize(so.size, so.stream)
			if err == nil && p.lastAllocated() {
				fresh[so.id] = p.nextID
			}
		} else if id, ok := fresh[so.id]; ok && p.liveIndex(id) >= 0 {
			sub, err = p.freeID(p.liveIndex(id))
		} else {
			continue
		}
		if err == nil {
			err = p.h.Verify()
		}
		if err != nil {
			return desc, fmt.Errorf("replayed op %d (%s): %w", k, sub, err)
		}
		p.replayed++
	}
	return desc, nil
}

// lastAllocated reports whether the last alloc was served.
func (p *program) lastAllocated() bool {
	return len(p.ids) > 0 && p.ids[len(p.ids)-1] == p.nextID
}

// liveIndex is id's index in p.ids, or -1.
func (p *program) liveIndex(id int64) int {
	for i, x := range p.ids {
		if x == id {
			return i
		}
	}
	return -1
}

// record adds op to the script of the current iteration.
func (p *program) record(op scriptOp) {
	if len(p.script) < maxScript {
		p.script = append(p.script, op)
	}
}

// sizeOf draws a request size of class c (0-15) from v (0-65535).
func (p *program) sizeOf(c byte, v uint64) uint64 {
	switch {
	case c <= 3:
		return 1 + v*16 // the small pool: up to 1 MiB
	case c <= 6:
		return 1<<20 + v*32 // a split: 1 to 3 MiB
	case c <= 9:
		return programG * (1 + v%8) // whole chunks
	case c <= 12:
		return programG + v*256 // odd and large: 2 to 18 MiB
	case c == 13:
		return programG * (4 + v%16) // big: stitches, new chunks, out of memory
	case c == 14:
		return 0
	}
	return p.capacity + 1 + v
}

func (p *program) alloc(class byte, v uint64, s stitch.Stream) (string, error) {
	return p.allocSize(p.sizeOf(class, v), s)
}

func (p *program) allocSize(size uint64, s stitch.Stream) (string, error) {
	p.nextID++
	op := Op{Kind: OpAlloc, ID: p.nextID, Size: size, Stream: s}
	err := p.h.Apply(op)
	switch {
	case err == nil:
		p.ids = append(p.ids, p.nextID)
		p.record(scriptOp{id: p.nextID, size: size, stream: s})
		return op.String(), nil
	case size == 0:
		return op.String(), p.want(err, stitch.ErrInvalidSize)
	case size > p.capacity:
		return op.String(), p.want(err, stitch.ErrTooLarge)
	}
	return op.String(), p.refused(err)
}

func (p *program) free(v uint64) (string, error) {
	if len(p.ids) == 0 {
		return "free (none live)", nil
	}
	return p.freeID(int(v % uint64(len(p.ids))))
}

// freeID frees the live block p.ids[i].
func (p *program) freeID(i int) (string, error) {
	id := p.ids[i]
	blk, _ := p.h.Live(id)
	if err := p.h.Apply(Op{Kind: OpFree, ID: id}); err != nil {
		return fmt.Sprintf("free #%d", id), fmt.Errorf("%w: free refused: %w", ErrViolation, err)
	}
	p.ids[i] = p.ids[len(p.ids)-1]
	p.ids = p.ids[:len(p.ids)-1]
	if len(p.freed) == 8 {
		p.freed = p.freed[1:]
	}
	p.freed = append(p.freed, blk)
	p.record(scriptOp{id: id})
	return fmt.Sprintf("free #%d", id), nil
}

// badFree makes a free the engine must refuse, and checks the refusal.
func (p *program) badFree(a byte, v uint64) (string, error) {
	e := p.h.Engine
	switch a % 4 {
	case 0, 1: // a freed block, unless its bytes are live again: double free or unknown
		if len(p.freed) == 0 {
			return "double free (none freed)", nil
		}
		blk := p.freed[int(v)%len(p.freed)]
		if p.isLive(blk.Ptr) {
			return "double free (pointer live again)", nil
		}
		err := e.Free(blk.Ptr, blk.Size)
		if errors.Is(err, stitch.ErrDoubleFree) {
			return "double free", nil
		}
		return "double free", p.want(err, stitch.ErrUnknownPointer)
	}
	if len(p.ids) == 0 {
		return "bad free (none live)", nil
	}
	blk, _ := p.h.Live(p.ids[int(v)%len(p.ids)])
	if a%4 == 2 {
		return "interior pointer", p.want(e.Free(blk.Ptr+1+uintptr(v%511), blk.Size), stitch.ErrUnknownPointer) // pointers are 512-aligned
	}
	return "wrong size", p.want(e.Free(blk.Ptr, blk.Size+1+v%4096), stitch.ErrSizeMismatch)
}

func (p *program) isLive(ptr uintptr) bool {
	for _, id := range p.ids {
		if b, _ := p.h.Live(id); b.Ptr == ptr {
			return true
		}
	}
	return false
}

// want is nil when err is target, else a violation.
func (p *program) want(err, target error) error {
	if errors.Is(err, target) {
		return nil
	}
	return fmt.Errorf("%w: want %v, got %v", ErrViolation, target, err)
}

// refused is nil for no error or a valid refusal (out of memory; the driver's error once a fault
// was injected) and a violation otherwise.
func (p *program) refused(err error) error {
	switch {
	case err == nil, errors.Is(err, stitch.ErrOutOfMemory):
		return nil
	case p.faulted && errors.Is(err, sim.ErrInjected):
		return nil
	case errors.Is(err, ErrViolation), errors.Is(err, ErrHarness):
		return err
	}
	return fmt.Errorf("%w: unexpected error: %w", ErrViolation, err)
}
