package main

import (
	"errors"
	"io"

	"github.com/gmlake/gmlake/gpu/internal/traincmd"
	"github.com/gmlake/gmlake/models"
)

// interleaved is one round of --interleave: every allocator's run is opened side by side on the
// GPU, and at each step of the sequence each takes that step in turn (traincmd.Turns), so that
// step k of one allocator is timed milliseconds from step k of the others rather than a run
// apart. The batch search and the trace then follow run by run, as alone.
func (c *cli) interleaved(e *env, w *models.ResNetWeights, model string, allocators []string, log io.Writer) []*result {
	results := make([]*result, len(allocators))
	runs := make([]*run, len(allocators))
	steppers := make([]*stepper, len(allocators))
	for i, alloc := range allocators {
		results[i] = c.newResult(model, alloc)
		ru, err := c.open(e, w, results[i])
		if err != nil {
			c.fail(results[i], err, log)
			continue
		}
		runs[i], steppers[i] = ru, ru.stepper(results[i])
	}
	for s, size := range c.sizes(c.Steps) {
		for _, i := range traincmd.Turns(len(allocators), s) {
			if steppers[i] == nil {
				continue
			}
			if err := steppers[i].step(s, size); err != nil {
				c.fail(results[i], err, log)
				steppers[i] = nil
			}
		}
	}
	for i, ru := range runs {
		if ru == nil {
			continue
		}
		var err error
		if steppers[i] != nil {
			steppers[i].finish(log)
			err = ru.after(results[i], log)
		}
		if err = errors.Join(err, ru.close(results[i])); err != nil {
			c.fail(results[i], err, log)
		}
	}
	return results
}
