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
	Calls uint64        // calls that succeeded
	Bytes uint64        // bytes they covered (allocated, mapped, made accessible, freed ...)
	Time  time.Duration // their estimated device time under the ledger's CostModel
}

// DriverLedger adds up an allocator's successful driver calls by kind: how many, the bytes they
// covered and their estimated time under a CostModel. It complements Allocator.DriverCalls, which
// counts every call, failed ones included (a failed call is not in the ledger: its cost was not
// measured). Make one with newDriverLedger.
type DriverLedger struct {
	model *CostModel
	tally [numLedgerKinds]CallTally // by ledgerKind
	time  time.Duration             // the sum of every tally's Time
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

func (l *DriverLedger) record(kind ledgerKind, bytes uint64, t time.Duration) {
	c := &l.tally[kind]
	c.Calls++
	c.Bytes += bytes
	c.Time += t
	l.time += t
}

// vmm records a successful stitch.Driver call of kind over bytes.
func (l *DriverLedger) vmm(kind stitch.CallKind, bytes uint64) {
	l.record(ledgerKind(kind), bytes, l.model.VMM(kind, bytes))
}

// malloc records a successful Device.Malloc of bytes.
func (l *DriverLedger) malloc(bytes uint64) { l.record(kindMalloc, bytes, l.model.Malloc(bytes)) }

// mallocFree records a successful Device.Free of bytes.
func (l *DriverLedger) mallocFree(bytes uint64) {
	l.record(kindMallocFree, bytes, l.model.MallocFree(bytes))
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
