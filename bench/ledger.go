package bench

import (
	"time"

	"github.com/gmlake/gmlake/stitch"
)

// Kinds of the Device calls in a DriverLedger (the stitch.Driver kinds use stitch.CallKind's names).
const (
	KindMalloc     = "mem_alloc" // Device.Malloc, cuMemAlloc on a GPU
	KindMallocFree = "mem_free"  // Device.Free, cuMemFree on a GPU
)

// CallTally is what an allocator's driver calls of one kind added up to.
type CallTally struct {
	Calls   uint64        // calls that succeeded
	Bytes   uint64        // bytes they covered (allocated, mapped, made accessible, freed ...)
	Handles uint64        // physical handles they touched (VMM calls on handles; 0 for the others)
	Time    time.Duration // their estimated device time under the ledger's CostModel
}

// DriverLedger adds up an allocator's successful driver calls by kind: how many, the bytes they
// covered and their estimated time under a CostModel. It complements Allocator.DriverCalls, which
// counts every call, failed ones included (a failed call is not in the ledger: its cost was not
// measured). Make one with newDriverLedger.
type DriverLedger struct {
	model *CostModel
	tally [numLedgerKinds]CallTally // by ledgerKind
	time  time.Duration             // the sum of every tally's Time
	wall  time.Duration             // wall time measured inside the calls, where the caller measures it
}

// ledgerKind indexes DriverLedger.tally: the stitch.CallKinds, then the Device calls. An array
// rather than a map, because direct records two calls per allocation.
type ledgerKind int

const (
	kindMalloc ledgerKind = ledgerKind(stitch.NumCallKinds) + iota
	kindMallocFree
	numLedgerKinds
)

func (k ledgerKind) String() string {
	switch k {
	case kindMalloc:
		return KindMalloc
	case kindMallocFree:
		return KindMallocFree
	}
	return stitch.CallKind(k).String()
}

// DriverAccounter is implemented by allocators that keep a DriverLedger; the replay reads it at
// iteration markers as it reads DriverCalls. DriverLedger may return nil: no ledger is kept.
type DriverAccounter interface {
	DriverLedger() *DriverLedger
}

func newDriverLedger(m CostModel) *DriverLedger { return &DriverLedger{model: &m} }

func (l *DriverLedger) record(kind ledgerKind, bytes, handles uint64, t time.Duration) {
	c := &l.tally[kind]
	c.Calls++
	c.Bytes += bytes
	c.Handles += handles
	c.Time += t
	l.time += t
}

// onHandles says whether calls of kind act on physical handles (and cost per handle).
func onHandles(kind stitch.CallKind) bool {
	switch kind {
	case stitch.CallCreate, stitch.CallRelease, stitch.CallMap, stitch.CallSetAccess, stitch.CallUnmap:
		return true
	}
	return false
}

// vmm records a successful stitch.Driver call of kind on one handle of bytes, or, for the kinds
// that take no handle, a call over bytes.
func (l *DriverLedger) vmm(kind stitch.CallKind, bytes uint64) {
	var handles uint64
	if onHandles(kind) {
		handles = 1
	}
	l.record(ledgerKind(kind), bytes, handles, l.model.VMM(kind, bytes))
}

// vmmRange records a successful SetAccess or Unmap over size bytes that covered the given bytes
// of each handle mapped there. A call that covered no mapping costs what one handle costs.
func (l *DriverLedger) vmmRange(kind stitch.CallKind, size uint64, perHandle []uint64) {
	if len(perHandle) == 0 {
		l.record(ledgerKind(kind), size, 0, l.model.VMM(kind, 0))
		return
	}
	var t time.Duration
	for _, b := range perHandle {
		t += l.model.VMM(kind, b)
	}
	l.record(ledgerKind(kind), size, uint64(len(perHandle)), t)
}

// addWall books wall time spent inside driver calls.
func (l *DriverLedger) addWall(d time.Duration) { l.wall += d }

// Wall is the wall time spent inside the driver calls, where the metering measures it (the
// metered stitch.Driver of gmlake; 0 for the baselines' Device calls): a replay subtracts it to
// time the allocator alone.
func (l *DriverLedger) Wall() time.Duration { return l.wall }

// malloc records a successful Device.Malloc of bytes.
func (l *DriverLedger) malloc(bytes uint64) { l.record(kindMalloc, bytes, 0, l.model.Malloc(bytes)) }

// mallocFree records a successful Device.Free of bytes.
func (l *DriverLedger) mallocFree(bytes uint64) {
	l.record(kindMallocFree, bytes, 0, l.model.MallocFree(bytes))
}

// Time is the estimated device time of every call recorded.
func (l *DriverLedger) Time() time.Duration { return l.time }

// Tally returns the figures of each kind with calls, by kind name (stitch.CallKind's names, and
// KindMalloc, KindMallocFree).
func (l *DriverLedger) Tally() map[string]CallTally {
	out := make(map[string]CallTally)
	for k, c := range l.tally {
		if c.Calls > 0 {
			out[ledgerKind(k).String()] = c
		}
	}
	return out
}
