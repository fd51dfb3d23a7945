package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train"
)

// evaluate prints the checkpoint's loss on the input_ids of DIR/reference.json.
func evaluate(c cli, out io.Writer) error {
	c.scaleMemory()
	if c.Checkpoint == "" {
		return errors.New("--eval needs --checkpoint DIR")
	}
	raw, err := os.ReadFile(filepath.Join(c.Checkpoint, "reference.json"))
	if err != nil {
		return err
	}
	var ref struct {
		InputIDs [][]int `json:"input_ids"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		return fmt.Errorf("reference.json: %w", err)
	}
	cfg, err := models.LoadConfig(c.Checkpoint)
	if err != nil {
		return err
	}
	w, err := models.LoadWeights(c.Checkpoint, cfg, nil)
	if err != nil {
		return err
	}
	mem, err := newMemory(c)
	if err != nil {
		return err
	}
	tr, err := train.New(w, mem.alloc)
	if err != nil {
		return errors.Join(err, mem.Close())
	}
	loss, err := tr.Loss(ref.InputIDs)
	if err = errors.Join(err, tr.Close(), mem.Close()); err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(out).Encode(map[string]float64{"loss": loss})
	}
	_, err = fmt.Fprintf(out, "loss %.6f on %d sequences of %d tokens (%s)\n", loss, len(ref.InputIDs), len(ref.InputIDs[0]), c.Checkpoint)
	return err
}
