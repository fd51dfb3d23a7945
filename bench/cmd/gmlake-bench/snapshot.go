package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gmlake/gmlake"
	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/snapshot"
)

// writeSnapshot replays p through gmlake (told where iterations begin, no capacity limit) on a
// simulated driver and writes the state at the trace's end, with the whole device trace, as a
// PyTorch memory snapshot to path.
// The engine's statistics at that moment go to log, for comparing with what a viewer shows.
func writeSnapshot(path string, p *bench.Prepared, log io.Writer) error {
	rec := snapshot.NewRecorder(sim.New())
	g, err := baseline.NewGMLake(rec)
	if err != nil {
		return err
	}
	run, err := bench.Replay(p, rec.Record(g), 0)
	if err != nil {
		return errors.Join(err, g.Close())
	}
	if run.OOM != nil {
		return errors.Join(fmt.Errorf("snapshot: %s: out of memory at event %d", p.Name, run.OOM.Event), g.Close())
	}
	f, err := os.Create(path)
	if err != nil {
		return errors.Join(err, g.Close())
	}
	err = gmlake.WriteSnapshot(f, rec)
	if err == nil {
		st := g.Engine().Stats()
		fmt.Fprintf(log, "snapshot %s (%s through gmlake): reserved %d bytes, live %d bytes, %d stitched views\n%s\n",
			path, p.Name, st.ReservedBytes, st.LiveBytes, st.StitchedBlocks, st)
	}
	return errors.Join(err, f.Close(), g.Close())
}
