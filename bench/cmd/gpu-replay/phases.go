package main

import (
	"time"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/stitch"
)

// phase is the part of a trace an event belongs to.
type phase int

const (
	setup   phase = iota // before the first iteration marker: model and optimizer construction
	warmup               // iterations 0 .. bench.SteadyFrom-1
	steady               // iterations bench.SteadyFrom on
	lastRep              // a repeated trace's last repetition (--repeat)
	numPhases
)

var phaseNames = [numPhases]string{"setup", "warmup", "steady", "last_repetition"}

// phaser tells an iteration's phase. A trace whose iterations are repeated (trace.RepeatIterations)
// numbers repetition r's iterations from r*stride: the first repetition has the warm-up, its last
// repetition (times > 1) is a phase of its own, where a converged allocator makes no driver call.
type phaser struct {
	stride int64 // trace.Repetition.IterStride; 0 for a trace played once
	times  int
}

func (p phaser) of(iter int) phase {
	switch {
	case iter < 0:
		return setup
	case p.times > 1 && int64(iter) >= int64(p.times-1)*p.stride:
		return lastRep
	case iter < bench.SteadyFrom:
		return warmup
	}
	return steady
}

// callClock counts device calls and the time spent in them, per phase and per iteration. The
// replay moves it from phase to phase, and iteration to iteration, at iteration markers.
type callClock struct {
	now    phase
	iter   int    // iteration in progress, -1 before the first marker
	phases phaser // how iterations map to phases
	calls  [numPhases]uint64
	nanos  [numPhases]int64
	// iterNanos: time in calls in each iteration, by iteration number.
	iterNanos map[int]int64
	// Per driver call kind, for stitch.Driver calls (a baseline.Device's calls have no kind).
	kindCalls [numPhases][stitch.NumCallKinds]uint64
	kindNanos [numPhases][stitch.NumCallKinds]int64
}

func (c *callClock) time(start time.Time) {
	ns := time.Since(start).Nanoseconds()
	c.calls[c.now]++
	c.nanos[c.now] += ns
	c.inIteration(ns)
}

func (c *callClock) timeKind(k stitch.CallKind, start time.Time) {
	ns := time.Since(start).Nanoseconds()
	c.calls[c.now]++
	c.nanos[c.now] += ns
	c.inIteration(ns)
	c.kindCalls[c.now][k]++
	c.kindNanos[c.now][k] += ns
}

// phaseOf is the phase of iteration it under the clock's phaser.
func (c *callClock) phaseOf(it int) phase { return c.phases.of(it) }

// inIteration books ns to the iteration in progress (none in the setup, which includes the
// allocator's construction, before the replay sets iter).
func (c *callClock) inIteration(ns int64) {
	if c.now == setup || c.iter < 0 {
		return
	}
	if c.iterNanos == nil {
		c.iterNanos = make(map[int]int64)
	}
	c.iterNanos[c.iter] += ns
}

// timedDriver is a stitch.Driver that times every call of the driver it wraps.
type timedDriver struct {
	d     stitch.Driver
	clock *callClock
}

func (t timedDriver) Granularity() uint64 { return t.d.Granularity() }

func (t timedDriver) Create(size uint64) (stitch.PhysHandle, error) {
	defer t.clock.timeKind(stitch.CallCreate, time.Now())
	return t.d.Create(size)
}

func (t timedDriver) Release(h stitch.PhysHandle) error {
	defer t.clock.timeKind(stitch.CallRelease, time.Now())
	return t.d.Release(h)
}

func (t timedDriver) Reserve(size uint64) (uintptr, error) {
	defer t.clock.timeKind(stitch.CallReserve, time.Now())
	return t.d.Reserve(size)
}

func (t timedDriver) Free(addr uintptr, size uint64) error {
	defer t.clock.timeKind(stitch.CallFree, time.Now())
	return t.d.Free(addr, size)
}

func (t timedDriver) Map(addr uintptr, size uint64, h stitch.PhysHandle, offset uint64) error {
	defer t.clock.timeKind(stitch.CallMap, time.Now())
	return t.d.Map(addr, size, h, offset)
}

func (t timedDriver) Unmap(addr uintptr, size uint64) error {
	defer t.clock.timeKind(stitch.CallUnmap, time.Now())
	return t.d.Unmap(addr, size)
}

func (t timedDriver) SetAccess(addr uintptr, size uint64) error {
	defer t.clock.timeKind(stitch.CallSetAccess, time.Now())
	return t.d.SetAccess(addr, size)
}

func (t timedDriver) RecordEvent(s stitch.Stream) (stitch.Event, error) {
	defer t.clock.timeKind(stitch.CallRecordEvent, time.Now())
	return t.d.RecordEvent(s)
}

func (t timedDriver) EventDone(e stitch.Event) (bool, error) {
	defer t.clock.timeKind(stitch.CallEventDone, time.Now())
	return t.d.EventDone(e)
}

func (t timedDriver) DestroyEvent(e stitch.Event) error {
	defer t.clock.timeKind(stitch.CallDestroyEvent, time.Now())
	return t.d.DestroyEvent(e)
}

func (t timedDriver) Synchronize() error {
	defer t.clock.timeKind(stitch.CallSynchronize, time.Now())
	return t.d.Synchronize()
}

func (t timedDriver) MemInfo() (free, total uint64, err error) {
	defer t.clock.timeKind(stitch.CallMemInfo, time.Now())
	return t.d.MemInfo()
}

// timedDevice is a baseline.Device that times every call of the device it wraps.
type timedDevice struct {
	d     baseline.Device
	clock *callClock
}

func (t timedDevice) Malloc(size uint64) (uintptr, error) {
	defer t.clock.time(time.Now())
	return t.d.Malloc(size)
}

func (t timedDevice) Free(ptr uintptr) error {
	defer t.clock.time(time.Now())
	return t.d.Free(ptr)
}
