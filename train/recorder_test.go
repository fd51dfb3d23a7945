package train

import (
	"bytes"
	"testing"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/memory"
	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/trace"
	"github.com/gmlake/gmlake/train/vm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecorderWritesAValidTrace(t *testing.T) {
	r := NewRecorder(&vm.GoAllocator{})
	r.Iteration(0)
	a, err := r.Get(100)
	require.NoError(t, err)
	b, err := r.Get(200)
	require.NoError(t, err)
	require.NoError(t, r.Free(a, 100))
	r.Iteration(1)
	require.NoError(t, r.Free(b, 200))
	_, err = r.Get(300)
	require.NoError(t, err)

	tr := r.Trace("unit")
	require.NoError(t, tr.Validate())
	var buf bytes.Buffer
	require.NoError(t, trace.Write(&buf, tr))
	back, err := trace.Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, "unit", back.Name)
	assert.Equal(t, tr.Events, back.Events)
	assert.Equal(t, []trace.Event{
		{Kind: trace.Iter, ID: 0},
		{Kind: trace.Alloc, ID: 0, Size: 100}, {Kind: trace.Alloc, ID: 1, Size: 200},
		{Kind: trace.Free, ID: 0}, {Kind: trace.Iter, ID: 1}, {Kind: trace.Free, ID: 1},
		{Kind: trace.Alloc, ID: 2, Size: 300},
	}, back.Events)
}

func TestRecorderRejectsForeignFree(t *testing.T) {
	inner := &vm.GoAllocator{}
	mem, err := inner.Get(8)
	require.NoError(t, err)
	r := NewRecorder(inner)
	assert.Error(t, r.Free(mem, 8))
	assert.Empty(t, r.Trace("x").Events)
}

// TestTrainersRefuseDeviceMemory: a trainer over device memory, directly or through a Recorder, is
// refused with vm.ErrDeviceMemory before any weight is copied.
func TestTrainersRefuseDeviceMemory(t *testing.T) {
	a, err := memory.NewAllocator(sim.New(sim.WithCapacity(1<<30), sim.WithGranularity(2<<20)))
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	for name, alloc := range map[string]vm.Allocator{"allocator": a, "recorder": NewRecorder(a)} {
		_, err := New(nil, alloc)
		assert.ErrorIs(t, err, vm.ErrDeviceMemory, name)
		_, err = NewImageTrainer(&models.ResNetWeights{}, alloc)
		assert.ErrorIs(t, err, vm.ErrDeviceMemory, name)
	}
	assert.True(t, NewRecorder(&vm.GoAllocator{}).HostAccessible())
	assert.Zero(t, a.Stats().LiveBytes)
}
