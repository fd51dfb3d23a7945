// Package progress says whether a command's progress bar may draw: only on a terminal, so a log
// or a pipe gets the results and none of the bar's carriage-return frames.
package progress

import (
	"io"
	"os"

	"golang.org/x/term"
)

// OnTerminal reports whether w is a terminal.
func OnTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
