package dataparallel

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

const mib = 1 << 20

// simFactory makes simulated drivers and keeps them, so tests can look at what each device holds.
type simFactory struct {
	mu      sync.Mutex
	drivers []*sim.Driver
	failAt  int // ordinal whose driver fails to open; -1 for none
}

func (f *simFactory) make(ordinal int) (stitch.Driver, error) {
	if ordinal == f.failAt {
		return nil, errors.New("device lost")
	}
	d := sim.New(sim.WithGranularity(2 * mib))
	f.mu.Lock()
	f.drivers = append(f.drivers, d)
	f.mu.Unlock()
	return d, nil
}

func TestPoolsKeepDevicesApart(t *testing.T) {
	f := &simFactory{failAt: -1}
	p, err := NewPools(3, f.make)
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	require.Equal(t, 3, p.Len())

	sizes := []uint64{3 * mib, 10 * mib, 1 * mib}
	for i, size := range sizes {
		a, err := p.Device(i)
		require.NoError(t, err)
		_, err = a.Alloc(uint64(size), 0)
		require.NoError(t, err)
	}
	for i, st := range p.Stats() {
		assert.Equal(t, sizes[i], st.LiveBytes, "device %d", i)
		assert.Equal(t, 1, st.LiveBlocks, "device %d", i)
		assert.Equal(t, f.drivers[i].Live().PhysicalBytes, st.ReservedBytes, "device %d holds only its own chunks", i)
	}
	assert.NoError(t, p.Check())

	sum := Summarize(p.Stats())
	assert.Equal(t, 3, sum.Devices)
	assert.Equal(t, uint64(10*mib), sum.MaxPeakLiveBytes)
	assert.GreaterOrEqual(t, sum.MaxPeakReserved, uint64(10*mib))
}

func TestPoolsBadArguments(t *testing.T) {
	f := &simFactory{failAt: -1}
	tests := []struct {
		name    string
		devices int
		factory DriverFactory
		want    error
	}{
		{"no devices", 0, f.make, ErrNoDevices},
		{"negative", -2, f.make, ErrNoDevices},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPools(tt.devices, tt.factory)
			assert.ErrorIs(t, err, tt.want)
		})
	}
	_, err := NewPools(2, nil)
	assert.Error(t, err)
	_, err = NewPools(2, func(int) (stitch.Driver, error) { return nil, nil })
	assert.ErrorContains(t, err, "device 0")

	p, err := NewPools(2, f.make)
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	for _, ord := range []int{-1, 2, 100} {
		_, err := p.Device(ord)
		assert.ErrorIs(t, err, ErrNoSuchDevice, "ordinal %d", ord)
	}
}

func TestPoolsFailingDeviceClosesTheOthers(t *testing.T) {
	f := &simFactory{failAt: 2}
	_, err := NewPools(4, f.make)
	require.Error(t, err)
	assert.ErrorContains(t, err, "device 2")
	assert.ErrorContains(t, err, "device lost")
	require.Len(t, f.drivers, 2, "devices after the failing one are never opened")
	for i, d := range f.drivers {
		live := d.Live()
		assert.Zero(t, live.Handles+live.Ranges+live.Mappings, "device %d left %+v", i, live)
	}
}

func TestPoolsPerDeviceCapacity(t *testing.T) {
	f := &simFactory{failAt: -1}
	p, err := NewPools(2, f.make, WithDeviceEngineOptions(func(ordinal int) []stitch.Option {
		return []stitch.Option{stitch.WithCapacity(uint64(8*mib) << ordinal)}
	}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()

	small, err := p.Device(0)
	require.NoError(t, err)
	big, err := p.Device(1)
	require.NoError(t, err)
	for _, e := range []*stitch.Engine{small, big} {
		_, err = e.Alloc(6*mib, 0)
		require.NoError(t, err)
	}
	_, err = small.Alloc(6*mib, 0)
	assert.ErrorIs(t, err, stitch.ErrOutOfMemory, "device 0 holds 8 MiB")
	_, err = big.Alloc(6*mib, 0)
	assert.NoError(t, err, "device 1 holds 16 MiB")
	assert.NoError(t, p.Check())
}

// TestPoolsConcurrentRanks runs one goroutine per device on host memory, as data-parallel ranks
// do: each writes a pattern into its blocks and checks that no other rank overwrote it.
func TestPoolsConcurrentRanks(t *testing.T) {
	const devices, rounds = 4, 40
	p, err := NewPools(devices, func(int) (stitch.Driver, error) {
		return host.New(host.WithGranularity(64<<10), host.WithCapacity(64*mib))
	})
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()

	var wg sync.WaitGroup
	errs := make([]error, devices)
	for dev := range devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[dev] = exerciseRank(p, dev, rounds)
		}()
	}
	wg.Wait()
	for dev, err := range errs {
		assert.NoError(t, err, "device %d", dev)
	}
	assert.NoError(t, p.Check())
	for dev, st := range p.Stats() {
		assert.Zero(t, st.LiveBytes, "device %d", dev)
		assert.Positive(t, st.PeakLiveBytes, "device %d", dev)
	}
	require.NoError(t, p.EmptyCache())
	assert.Zero(t, Summarize(p.Stats()).TotalReserved)
}

func exerciseRank(p *Pools, dev, rounds int) error {
	a, err := p.Device(dev)
	if err != nil {
		return err
	}
	for r := range rounds {
		size := uint64((r%7+1)*100_000 + dev*4096)
		ptr, err := a.Alloc(size, 0)
		if err != nil {
			return err
		}
		buf := bytesAt(ptr, size)
		for i := range buf {
			buf[i] = byte(dev)
		}
		for i, b := range buf {
			if b != byte(dev) {
				return fmt.Errorf("round %d: byte %d is %d", r, i, b)
			}
		}
		if err := a.Free(ptr, size); err != nil {
			return err
		}
	}
	return nil
}
