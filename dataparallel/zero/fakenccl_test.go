package zero_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/dataparallel/nccl"
)

// ncclCollectives are zero.Collectives over NCCL communicators, one per in-process rank: every
// call is one collective per rank inside one NCCL group. The global norm's float64 partial sums
// are added in Go, in rank order (NCCL's fake supports float32 only).
type ncclCollectives struct {
	lib   *nccl.Library
	comms []*nccl.Comm
}

func addr(b []float32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func (c ncclCollectives) each(bufs [][]float32, call func(r int, comm *nccl.Comm) error) error {
	defer runtime.KeepAlive(bufs)
	return c.lib.Group(func() error {
		for r, comm := range c.comms {
			if err := call(r, comm); err != nil {
				return err
			}
		}
		return nil
	})
}

func (c ncclCollectives) AllReduceSum(bufs [][]float32) error {
	return c.each(bufs, func(r int, comm *nccl.Comm) error {
		return comm.AllReduce(addr(bufs[r]), addr(bufs[r]), len(bufs[r]), nccl.Float32, nccl.Sum, 0)
	})
}

func (c ncclCollectives) ReduceScatterSum(send, recv [][]float32) error {
	defer runtime.KeepAlive(send)
	return c.each(recv, func(r int, comm *nccl.Comm) error {
		return comm.ReduceScatter(addr(send[r]), addr(recv[r]), len(recv[r]), nccl.Float32, nccl.Sum, 0)
	})
}

func (c ncclCollectives) AllGather(send, recv [][]float32) error {
	defer runtime.KeepAlive(send)
	return c.each(recv, func(r int, comm *nccl.Comm) error {
		return comm.AllGather(addr(send[r]), addr(recv[r]), len(send[r]), nccl.Float32, 0)
	})
}

func (ncclCollectives) AllReduceSum64(vals []float64) float64 {
	var s float64
	for _, v := range vals {
		s += v
	}
	return s
}

var (
	fakeOnce sync.Once
	fakeLib  *nccl.Library
	fakeErr  error
	fakeSkip string
)

// fakeNCCL builds dataparallel/nccl's fake NCCL and driver/cuda's fake libcuda (plain C over host
// memory) with the machine's C compiler and opens them as NCCL and the CUDA driver, once per test
// binary; it skips where no C compiler is found.
func fakeNCCL(t *testing.T) *nccl.Library {
	t.Helper()
	fakeOnce.Do(func() {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "cc"
		}
		if _, err := exec.LookPath(cc); err != nil {
			fakeSkip = "no C compiler (" + cc + ") to build the fake NCCL: " + err.Error()
			return
		}
		dir, err := os.MkdirTemp("", "zero-fakenccl")
		if err != nil {
			fakeErr = err
			return
		}
		ncclSO, cudaSO := filepath.Join(dir, "libfakenccl.so"), filepath.Join(dir, "libcuda.so.1")
		for _, b := range [][]string{
			{"-shared", "-fPIC", "-O1", "-o", ncclSO, "../nccl/testdata/fakenccl.c", "-lpthread"},
			{"-shared", "-fPIC", "-O1", "-o", cudaSO, "../../driver/cuda/testdata/fakecuda.c"},
		} {
			if out, err := exec.Command(cc, b...).CombinedOutput(); err != nil {
				fakeErr = &exec.ExitError{Stderr: out}
				return
			}
		}
		os.Setenv(nccl.EnvVar, ncclSO)
		os.Setenv(nccl.DriverEnvVar, cudaSO)
		fakeLib, fakeErr = nccl.Open()
	})
	if fakeSkip != "" {
		t.Skip(fakeSkip)
	}
	require.NoError(t, fakeErr)
	return fakeLib
}

// fakeCollectives opens one fake communicator per rank; they are destroyed with the test.
func fakeCollectives(t *testing.T, ranks int) ncclCollectives {
	t.Helper()
	lib := fakeNCCL(t)
	devices := make([]int, ranks)
	for i := range devices {
		devices[i] = i
	}
	comms, err := lib.InitAll(devices)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			require.NoError(t, c.Destroy())
		}
	})
	return ncclCollectives{lib: lib, comms: comms}
}
