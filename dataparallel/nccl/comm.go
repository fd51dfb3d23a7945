package nccl

import (
	"errors"
	"fmt"
)

// ErrClosed is returned for a call on a destroyed communicator.
var ErrClosed = errors.New("nccl: communicator destroyed")

// Comm is one rank's communicator (ncclComm_t). Its collectives may be called from any goroutine,
// but NCCL requires that the calls of one communicator be issued in the same order on every rank.
type Comm struct {
	lib    *Library
	handle uintptr // ncclComm_t; 0 once destroyed
	rank   int
	count  int
	device int
}

// InitAll creates one communicator per device of devices, in one process (ncclCommInitAll):
// communicator i has rank i and runs on devices[i].
func (l *Library) InitAll(devices []int) ([]*Comm, error) {
	if len(devices) == 0 {
		return nil, fmt.Errorf("%w: InitAll needs at least one device", ErrInvalidArgument)
	}
	handles, r := l.callInitAll(devices)
	if err := l.check("ncclCommInitAll", r); err != nil {
		return nil, err
	}
	comms := make([]*Comm, len(handles))
	for i, h := range handles {
		comms[i] = &Comm{lib: l, handle: h, rank: i, count: len(devices), device: devices[i]}
	}
	return comms, nil
}

// InitRank joins the communicator named by id as rank of nranks (ncclCommInitRank), on the device
// whose CUcontext ctx is (driver/cuda's Driver.Context; 0 keeps the thread's current context).
// Outside a Group it blocks until all nranks ranks have joined.
func (l *Library) InitRank(ctx uintptr, nranks int, id UniqueID, rank int) (*Comm, error) {
	if nranks < 1 || rank < 0 || rank >= nranks {
		return nil, fmt.Errorf("%w: rank %d of %d", ErrInvalidArgument, rank, nranks)
	}
	h, r, cu := l.callInitRank(ctx, nranks, id, rank)
	if cu != 0 {
		return nil, &Error{Call: "ncclCommInitRank (making the device's context current)", Result: UnhandledCudaError,
			Message: fmt.Sprintf("CUresult %d", cu)}
	}
	if err := l.check("ncclCommInitRank", r); err != nil {
		return nil, err
	}
	c := &Comm{lib: l, handle: h, rank: rank, count: nranks, device: -1}
	if dev, r := l.callCommInt(l.fn.commCuDevice, h); r == Success {
		c.device = dev
	}
	// NCCL's own view of the communicator must be the one asked for.
	got, r1 := l.callCommInt(l.fn.commUserRank, h)
	n, r2 := l.callCommInt(l.fn.commCount, h)
	if err := errors.Join(l.check("ncclCommUserRank", r1), l.check("ncclCommCount", r2)); err != nil {
		return nil, errors.Join(err, c.Destroy())
	}
	if got != rank || n != nranks {
		return nil, errors.Join(fmt.Errorf("%w: NCCL made rank %d of %d, asked for %d of %d", ErrInternal, got, n, rank, nranks),
			c.Destroy())
	}
	return c, nil
}

// Rank is this communicator's rank; Count the number of ranks; Device the CUDA device ordinal it
// runs on (-1 if NCCL could not say).
func (c *Comm) Rank() int   { return c.rank }
func (c *Comm) Count() int  { return c.count }
func (c *Comm) Device() int { return c.device }

// AsyncError is the communicator's asynchronous error (ncclCommGetAsyncError): nil while healthy,
// an *Error wrapping ErrInProgress while a non-blocking operation runs.
func (c *Comm) AsyncError() error {
	if c.handle == 0 {
		return ErrClosed
	}
	async, r := c.lib.callAsyncError(c.handle)
	if err := c.lib.check("ncclCommGetAsyncError", r); err != nil {
		return err
	}
	return c.lib.check("async", async)
}

// Destroy frees the communicator (ncclCommDestroy) once every operation queued on it is done.
// A second Destroy returns ErrClosed.
func (c *Comm) Destroy() error {
	if c.handle == 0 {
		return ErrClosed
	}
	r := c.lib.callDestroy(c.handle)
	c.handle = 0
	return c.lib.check("ncclCommDestroy", r)
}

// AllReduce reduces count elements of send over all ranks with op and leaves the result in recv on
// every rank (ncclAllReduce); send == recv is in place. Queued on stream.
func (c *Comm) AllReduce(send, recv uintptr, count int, dt DataType, op ReduceOp, stream uintptr) error {
	if err := c.usable("ncclAllReduce", count); err != nil {
		return err
	}
	return c.lib.check("ncclAllReduce", c.lib.callAllReduce(send, recv, count, dt, op, c.handle, stream))
}

// ReduceScatter reduces Count()*recvCount elements of send over all ranks with op and leaves block
// Rank() of the result, recvCount elements, in recv (ncclReduceScatter). In place when
// recv == send + Rank()*recvCount*dt.Size().
func (c *Comm) ReduceScatter(send, recv uintptr, recvCount int, dt DataType, op ReduceOp, stream uintptr) error {
	if err := c.usable("ncclReduceScatter", recvCount); err != nil {
		return err
	}
	return c.lib.check("ncclReduceScatter", c.lib.callReduceScatter(send, recv, recvCount, dt, op, c.handle, stream))
}

// AllGather gathers sendCount elements from every rank into recv, rank r's at element
// r*sendCount (ncclAllGather). In place when send == recv + Rank()*sendCount*dt.Size().
func (c *Comm) AllGather(send, recv uintptr, sendCount int, dt DataType, stream uintptr) error {
	if err := c.usable("ncclAllGather", sendCount); err != nil {
		return err
	}
	return c.lib.check("ncclAllGather", c.lib.callAllGather(send, recv, sendCount, dt, c.handle, stream))
}

func (c *Comm) usable(call string, count int) error {
	if c.handle == 0 {
		return fmt.Errorf("%s: %w", call, ErrClosed)
	}
	if count < 0 {
		return fmt.Errorf("%s: %w: count %d", call, ErrInvalidArgument, count)
	}
	return nil
}
