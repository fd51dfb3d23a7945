// Command gmlake-bench replays allocation traces through the project's allocators and reports what
// each needs: peak reserved bytes, fragmentation, the smallest device that fits the run, driver
// calls per iteration and speed. See package bench for the definitions.
//
//	gmlake-bench replay [--allocators gmlake,gorgonia,caching,direct] [--min-capacity]
//	    [--capacity BYTES] [--json] [--plot DIR] [--markdown FILE --anchors FILE] TRACE...
package main

import (
	"fmt"
	"os"

	"github.com/alecthomas/kong"
)

type cli struct {
	Replay replayCmd `cmd:"" help:"Replay traces (text or PyTorch snapshot pickle, gzip'd or not) through allocators."`
}

func main() {
	var c cli
	ctx := kong.Parse(&c, kong.Name("gmlake-bench"),
		kong.Description("Measures how much device memory a training trace needs under each allocator."),
		kong.UsageOnError())
	if err := ctx.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "gmlake-bench:", err)
		os.Exit(1)
	}
}
