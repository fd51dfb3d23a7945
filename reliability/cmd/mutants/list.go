package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// ErrList: the mutant list is malformed, or names code that is not there.
var ErrList = errors.New("mutants: bad list")

// Mutant is one deliberate bug: the only occurrence of Original in File becomes Mutated.
type Mutant struct {
	Name     string
	Why      string   // what the bug breaks, for the report
	File     string   // relative to the module root
	Fast     bool     // part of the subset CI runs
	Tests    []Target // what must fail with the bug in
	Original string
	Mutated  string
	Line     int // of the mutant's header in the list, for messages

	mutatedSet bool
}

// Target is a package and the tests of it that must catch a mutant.
type Target struct {
	Pkg string // a package path relative to the module root, "./stitch"
	Run string // a -run pattern
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Parse reads a mutant list:
//
//	== name [fast]
//	why: what the bug breaks
//	file: stitch/calls.go
//	test: ./stitch ^TestStreams$
//	test: ./reliability ^TestStreamGuard
//	--- original
//	<lines, verbatim>
//	+++ mutant
//	<lines, verbatim>
//
// A snippet ends at the next line starting with "#" (a comment: Go code never starts a line so)
// or "== " (the next mutant), or at the end; its trailing blank lines are dropped.
func Parse(r io.Reader) ([]Mutant, error) {
	var (
		out   []Mutant
		cur   *Mutant
		state string // "head", "original", "mutant"
		buf   []string
	)
	names := map[string]bool{}
	flush := func() {
		text := strings.TrimRight(strings.Join(buf, "\n"), "\n")
		if text != "" {
			text += "\n"
		}
		switch state {
		case "original":
			cur.Original = text
		case "mutant":
			cur.Mutated, cur.mutatedSet = text, true
		}
		buf = nil
	}
	finish := func() error {
		if cur == nil {
			return nil
		}
		flush()
		switch {
		case cur.File == "":
			return fmt.Errorf("%w: mutant %s (line %d) names no file", ErrList, cur.Name, cur.Line)
		case len(cur.Tests) == 0:
			return fmt.Errorf("%w: mutant %s (line %d) names no test", ErrList, cur.Name, cur.Line)
		case strings.TrimSpace(cur.Original) == "":
			return fmt.Errorf("%w: mutant %s (line %d) has no original snippet", ErrList, cur.Name, cur.Line)
		case cur.Original == cur.Mutated:
			return fmt.Errorf("%w: mutant %s (line %d) changes nothing", ErrList, cur.Name, cur.Line)
		case !cur.mutatedSet:
			return fmt.Errorf("%w: mutant %s (line %d) has no '+++ mutant' part", ErrList, cur.Name, cur.Line)
		}
		out = append(out, *cur)
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "== "):
			if err := finish(); err != nil {
				return nil, err
			}
			f := strings.Fields(line[3:])
			if len(f) == 0 || !nameRE.MatchString(f[0]) || len(f) > 2 || len(f) == 2 && f[1] != "fast" {
				return nil, fmt.Errorf("%w: line %d: want '== name [fast]', got %q", ErrList, n, line)
			}
			if names[f[0]] {
				return nil, fmt.Errorf("%w: line %d: mutant %s listed twice", ErrList, n, f[0])
			}
			names[f[0]] = true
			cur, state = &Mutant{Name: f[0], Fast: len(f) == 2, Line: n}, "head"
		case cur != nil && line == "--- original" && state == "head":
			state = "original"
		case cur != nil && line == "+++ mutant" && state == "original":
			flush()
			state = "mutant"
		case cur != nil && (state == "original" || state == "mutant") && !strings.HasPrefix(line, "#"):
			buf = append(buf, line)
		case strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "":
			if state == "original" || state == "mutant" {
				flush()
				state = "done"
			}
		case cur == nil:
			return nil, fmt.Errorf("%w: line %d: %q before the first mutant", ErrList, n, line)
		default:
			key, val, ok := strings.Cut(line, ":")
			val = strings.TrimSpace(val)
			switch {
			case !ok:
				return nil, fmt.Errorf("%w: line %d: %q", ErrList, n, line)
			case key == "why":
				cur.Why = strings.TrimSpace(cur.Why + " " + val)
			case key == "file":
				cur.File = val
			case key == "test":
				pkg, run, ok := strings.Cut(val, " ")
				run = strings.TrimSpace(run)
				if !ok || !strings.HasPrefix(pkg, "./") || run == "" {
					return nil, fmt.Errorf("%w: line %d: want 'test: ./pkg pattern', got %q", ErrList, n, line)
				}
				if _, err := regexp.Compile(run); err != nil {
					return nil, fmt.Errorf("%w: line %d: %w", ErrList, n, err)
				}
				cur.Tests = append(cur.Tests, Target{Pkg: pkg, Run: run})
			default:
				return nil, fmt.Errorf("%w: line %d: unknown key %q", ErrList, n, key)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return out, nil
}

// Apply returns src with m's original snippet replaced, or an ErrList error when the snippet does
// not occur exactly once (the code moved on and the mutant must be brought along).
func (m Mutant) Apply(src string) (string, error) {
	switch n := strings.Count(src, m.Original); n {
	case 1:
		return strings.Replace(src, m.Original, m.Mutated, 1), nil
	case 0:
		return "", fmt.Errorf("%w: mutant %s: its original snippet is not in %s any more", ErrList, m.Name, m.File)
	default:
		return "", fmt.Errorf("%w: mutant %s: its original snippet occurs %d times in %s", ErrList, m.Name, n, m.File)
	}
}
