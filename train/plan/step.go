package plan

import "fmt"

// Op is what one program step does.
type Op uint8

const (
	Load    Op = iota // bring a leaf's value to the executor (bind or upload it)
	Exec              // run the node's op into a fresh buffer (or a view of an input's)
	Offload           // copy the node's value to host memory and drop the live instance
	Restore           // copy the node's value back from host memory into a fresh buffer
)

func (o Op) String() string {
	switch o {
	case Load:
		return "load"
	case Exec:
		return "exec"
	case Offload:
		return "offload"
	case Restore:
		return "restore"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Step is one program step. Node and Release hold node indices of the Graph.
type Step struct {
	Op        Op
	Node      int
	Recompute bool  // an Exec repeating a forward computation in backward
	Release   []int // nodes whose current instance dies right after this step (an Offload's own included)
}

// produces says whether the step makes a new instance of its node's value.
func (s Step) produces() bool { return s.Op != Offload }
