package train

import (
	"log/slog"

	"github.com/gmlake/gmlake/models"
)

// Option configures a Trainer.
type Option func(*config)

type config struct {
	lora      *models.LoRA
	recompute bool
	offload   bool
	adamw     AdamW
	logger    *slog.Logger
}

// WithLoRA trains rank-r adapters on the given projections instead of every weight (nil: full
// fine-tuning, the default).
func WithLoRA(l *models.LoRA) Option { return func(c *config) { c.lora = l } }

// WithRecompute switches per-block activation recomputation on or off (default off).
func WithRecompute(on bool) Option { return func(c *config) { c.recompute = on } }

// WithOffload switches per-block activation offload to host memory on or off (default off).
func WithOffload(on bool) Option { return func(c *config) { c.offload = on } }

// WithAdamW sets the optimizer (default DefaultAdamW).
func WithAdamW(a AdamW) Option { return func(c *config) { c.adamw = a } }

// WithLogger logs graph builds and steps at debug level (default: no logging).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }
