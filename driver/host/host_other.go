//go:build !linux

package host

import (
	"errors"

	"github.com/gmlake/gmlake/stitch"
)

// ErrUnsupported: the host driver needs Linux (memfd, fallocate, MAP_FIXED over reservations).
var ErrUnsupported = errors.New("host driver: only supported on Linux")

// Driver is unavailable off Linux; New always fails.
type Driver struct{ stitch.Driver }

// New fails with ErrUnsupported off Linux.
func New(...Option) (*Driver, error) { return nil, ErrUnsupported }

// Close does nothing.
func (*Driver) Close() error { return nil }
