// Package trace reads and writes allocation traces in the text format of ../shared/traces/README.md:
//
//	# workload NAME ...          header comment (any line starting with '#')
//	a ID SIZE STREAM             allocation of SIZE bytes on STREAM, ID unique in the file
//	f ID                         free of allocation ID
//	i N                          training iteration N begins
//
// Files may be gzip'd: Read detects it by magic bytes, not by name; WriteFile gzips a path ending
// in ".gz". A Trace holds every event in memory: the largest real traces have ~10^5 events, a few
// MiB.
//
// RepeatIterations plays a trace's iterations several times in a row, as a long training run plays
// the same shapes again: the replays that measure how an allocator settles (bench's convergence,
// gpu-replay's repetitions, the engine's own tests) all build their streams with it.
package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Kind says what an Event is.
type Kind uint8

// The kinds of event.
const (
	Alloc Kind = iota // a request for Size bytes on Stream, named ID
	Free              // the release of allocation ID
	Iter              // training iteration ID begins
)

// Event is one line of a trace.
type Event struct {
	Kind   Kind
	ID     int64  // allocation ID (Alloc, Free) or iteration number (Iter)
	Size   uint64 // requested bytes (Alloc only)
	Stream uint64 // stream id (Alloc only)
}

// Trace is a parsed trace.
type Trace struct {
	Name   string   // workload name from the header, or "" if none
	Header []string // comment lines, without the leading '#'
	Events []Event
}

// ErrFormat is wrapped by every parse error.
var ErrFormat = errors.New("trace: bad format")

// ReadFile parses the trace at path, gzip'd or plain.
func ReadFile(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Read parses a trace, gzip'd or plain.
func Read(r io.Reader) (*Trace, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	t := &Trace{}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if line[0] == '#' {
			h := strings.TrimSpace(line[1:])
			t.Header = append(t.Header, h)
			if f := strings.Fields(h); t.Name == "" && len(f) >= 2 && f[0] == "workload" {
				t.Name = f[1]
			}
			continue
		}
		ev, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", lineNo, line, err)
		}
		t.Events = append(t.Events, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return t, nil
}

func parseLine(line string) (Event, error) {
	f := strings.Fields(line)
	want := map[string]int{"a": 4, "f": 2, "i": 2}[f[0]]
	if want == 0 || len(f) != want {
		return Event{}, ErrFormat
	}
	nums := make([]uint64, len(f)-1)
	for i, s := range f[1:] {
		n, err := strconv.ParseUint(s, 10, 63)
		if err != nil {
			return Event{}, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		nums[i] = n
	}
	switch f[0] {
	case "a":
		return Event{Kind: Alloc, ID: int64(nums[0]), Size: nums[1], Stream: nums[2]}, nil
	case "f":
		return Event{Kind: Free, ID: int64(nums[0])}, nil
	default:
		return Event{Kind: Iter, ID: int64(nums[0])}, nil
	}
}

// Write writes t in the text format (plain; wrap w in a gzip.Writer to compress).
func Write(w io.Writer, t *Trace) error {
	bw := bufio.NewWriter(w)
	for _, h := range t.Header {
		fmt.Fprintf(bw, "# %s\n", h)
	}
	for _, ev := range t.Events {
		switch ev.Kind {
		case Alloc:
			fmt.Fprintf(bw, "a %d %d %d\n", ev.ID, ev.Size, ev.Stream)
		case Free:
			fmt.Fprintf(bw, "f %d\n", ev.ID)
		case Iter:
			fmt.Fprintf(bw, "i %d\n", ev.ID)
		}
	}
	return bw.Flush()
}

// WriteFile writes t to path in the text format, gzip'd when path ends in ".gz", so ReadFile
// reads it back.
func WriteFile(path string, t *Trace) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		zw = gzip.NewWriter(f)
		w = zw
	}
	err = Write(w, t)
	if zw != nil {
		err = errors.Join(err, zw.Close())
	}
	return errors.Join(err, f.Close())
}

// Validate checks that IDs are unique, every free names a live allocation and sizes are positive.
func (t *Trace) Validate() error {
	live := make(map[int64]bool)
	seen := make(map[int64]bool)
	for i, ev := range t.Events {
		switch ev.Kind {
		case Alloc:
			if seen[ev.ID] || ev.Size == 0 {
				return fmt.Errorf("%w: event %d: duplicate id or zero size in allocation %d", ErrFormat, i, ev.ID)
			}
			seen[ev.ID], live[ev.ID] = true, true
		case Free:
			if !live[ev.ID] {
				return fmt.Errorf("%w: event %d: free of %d, which is not live", ErrFormat, i, ev.ID)
			}
			delete(live, ev.ID)
		}
	}
	return nil
}

// Iterations returns the index in Events of each Iter marker, in order.
func (t *Trace) Iterations() []int {
	var idx []int
	for i, ev := range t.Events {
		if ev.Kind == Iter {
			idx = append(idx, i)
		}
	}
	return idx
}
