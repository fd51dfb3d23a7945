// Command gmlake-bench replays allocation traces through the project's allocators and reports what
// each needs: peak reserved bytes, fragmentation, the smallest device that fits the run, driver
// calls per iteration and speed. See package bench for the definitions.
//
//	gmlake-bench replay [--allocators gmlake,gorgonia,caching,direct] [--min-capacity]
//	    [--capacity BYTES] [--repeat N] [--json] [--plot DIR] [--markdown FILE --anchors FILE] TRACE...
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kong"
)

type cli struct {
	Replay replayCmd `cmd:"" help:"Replay traces (text or PyTorch snapshot pickle, gzip'd or not) through allocators."`
}

func main() {
	var c cli
	ctx := kong.Parse(&c, options(os.Stdout)...)
	if err := ctx.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "gmlake-bench:", err)
		os.Exit(1)
	}
}

// options configures the parser; the commands print to stdout.
func options(stdout io.Writer) []kong.Option {
	return []kong.Option{kong.Name("gmlake-bench"),
		kong.Description("Measures how much device memory a training trace needs under each allocator."),
		kong.UsageOnError(), kong.BindTo(stdout, (*io.Writer)(nil))}
}
