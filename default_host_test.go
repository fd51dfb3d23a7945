//go:build !cuda && !gmlakegpu

package gmlake

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/host"
)

func TestDefaultDriverIsHost(t *testing.T) {
	a, err := NewAllocator()
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	assert.IsType(t, &host.Driver{}, a.Driver())
	assert.Equal(t, uint64(host.DefaultGranularity), a.Granularity())
}

func TestDefaultDriverRejectsBadGranularity(t *testing.T) {
	_, err := NewAllocator(WithGranularity(1000))
	assert.ErrorIs(t, err, host.ErrBadOption)
}
