package bench

import "fmt"

// newSimGMLake will build the stitching engine over driver/sim once package stitch has an Engine.
func newSimGMLake(capacity uint64) (Allocator, error) {
	return nil, fmt.Errorf("%w: gmlake: the stitch engine has not landed yet", ErrUnknown)
}
