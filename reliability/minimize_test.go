package reliability

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// minimize shrinks a failing program (delta debugging over whole records) while it still fails
// with a violation or a leak; the set-up byte stays.
func minimize(prog []byte, opts ProgramOptions) []byte {
	fails := func(p []byte) bool {
		_, err := RunProgram(p, opts)
		return errors.Is(err, ErrViolation) || errors.Is(err, ErrLeak)
	}
	if !fails(prog) {
		return prog
	}
	records := func(p []byte) int { return (len(p) - 1) / RecordSize }
	for chunk := records(prog) / 2; chunk >= 1; {
		removed := false
		for at := 0; at+chunk <= records(prog); {
			cand := append(append([]byte{}, prog[:1+at*RecordSize]...), prog[1+(at+chunk)*RecordSize:]...)
			if fails(cand) {
				prog, removed = cand, true
			} else {
				at += chunk
			}
		}
		if !removed {
			chunk /= 2
		}
	}
	return prog
}

// TestMinimize shrinks the program of GMLAKE_MINIMIZE=seed and prints it, operation by operation,
// with the hex string that replays it (GMLAKE_PROGRAM=hex go test -run TestReplayProgram).
func TestMinimize(t *testing.T) {
	s := os.Getenv("GMLAKE_MINIMIZE")
	if s == "" {
		t.Skip("set GMLAKE_MINIMIZE=seed")
	}
	var seed uint64
	_, err := fmt.Sscan(s, &seed)
	require.NoError(t, err)
	prog := minimize(randomProgram(seed, 2000), programOptions())
	t.Logf("program: %s", hex.EncodeToString(prog))
	replayProgram(t, prog)
}

// TestReplayProgram runs the hex program in GMLAKE_PROGRAM, printing every operation.
func TestReplayProgram(t *testing.T) {
	s := os.Getenv("GMLAKE_PROGRAM")
	if s == "" {
		t.Skip("set GMLAKE_PROGRAM=hex")
	}
	prog, err := hex.DecodeString(s)
	require.NoError(t, err)
	replayProgram(t, prog)
}

func replayProgram(t *testing.T, prog []byte) {
	opts := programOptions()
	i := 0
	opts.OnOp = func(desc string, err error, _ *Harness) {
		t.Logf("%3d %s: %v", i, desc, err)
		i++
	}
	_, err := RunProgram(prog, opts)
	t.Logf("result: %v", err)
}
