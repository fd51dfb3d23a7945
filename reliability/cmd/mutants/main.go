// Command mutants checks that the test suites catch bugs of meaning, not only broken structure. It
// reads a list of small named mutations (mutants.txt beside this file: a file, an exact snippet of
// it, its replacement, and the tests that must catch it), applies each alone to a scratch overlay of
// the tree (go build -overlay: the working tree itself is never written), builds the named test
// packages with it and runs the named tests. A mutant survives when they all pass.
//
// It fails when any mutant survives, when a snippet is no longer found exactly once (the code moved:
// bring the mutant along), when a mutant does not compile, and when a named test does not pass, or
// runs no test at all, on the unmutated tree.
//
//	go run ./reliability/cmd/mutants [-fast] [-run REGEXP] [-list FILE] [-timeout 5m] [-v]
//
// -fast runs the mutants marked fast (CI's subset); `make mutants` runs them all.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

func main() {
	var (
		list    = flag.String("list", "reliability/cmd/mutants/mutants.txt", "the mutant list, relative to the module root")
		fast    = flag.Bool("fast", false, "only the mutants marked fast")
		run     = flag.String("run", "", "only the mutants whose name matches this regular expression")
		timeout = flag.Duration("timeout", 5*time.Minute, "limit for one test run")
		verbose = flag.Bool("v", false, "print the output of every test run")
	)
	flag.Parse()
	if err := mainErr(*list, *fast, *run, *timeout, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

func mainErr(list string, fast bool, run string, timeout time.Duration, verbose bool) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(list) {
		list = filepath.Join(root, list)
	}
	f, err := os.Open(list)
	if err != nil {
		return err
	}
	all, err := Parse(f)
	f.Close()
	if err != nil {
		return err
	}
	// Every snippet must still be found, selected or not: a stale mutant fails at once.
	var stale []error
	for _, m := range all {
		src, err := os.ReadFile(filepath.Join(root, m.File))
		if err == nil {
			_, err = m.Apply(string(src))
		}
		if err != nil {
			stale = append(stale, err)
		}
	}
	if err := errors.Join(stale...); err != nil {
		return err
	}
	var sel *regexp.Regexp
	if run != "" {
		if sel, err = regexp.Compile(run); err != nil {
			return err
		}
	}
	var ms []Mutant
	for _, m := range all {
		if (!fast || m.Fast) && (sel == nil || sel.MatchString(m.Name)) {
			ms = append(ms, m)
		}
	}
	tmp, err := os.MkdirTemp("", "gmlake-mutants-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r := &runner{root: root, tmp: tmp, timeout: timeout, verbose: verbose}
	return r.runAll(ms, len(all))
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the module")
	}
	return filepath.Dir(mod), nil
}

type runner struct {
	root, tmp string
	timeout   time.Duration
	verbose   bool
	built     int
}

// outcome of one test run.
type outcome struct {
	passed bool
	failed []string // names of the tests that failed
	ran    bool     // at least one test ran
	out    []byte
}

func (r *runner) runAll(ms []Mutant, listed int) error {
	start := time.Now()
	// The targets must pass on the tree as it is, or a failure under a mutant means nothing.
	seen := map[Target]bool{}
	for _, m := range ms {
		for _, tg := range m.Tests {
			if seen[tg] {
				continue
			}
			seen[tg] = true
			o, err := r.test(tg, "")
			if err != nil {
				return fmt.Errorf("unmutated %s -run %q: %w", tg.Pkg, tg.Run, err)
			}
			if !o.passed || !o.ran {
				os.Stderr.Write(o.out)
				return fmt.Errorf("unmutated %s -run %q: passed=%v ran a test=%v: fix the tree or the list first", tg.Pkg, tg.Run, o.passed, o.ran)
			}
		}
	}
	var survivors []string
	for _, m := range ms {
		t0 := time.Now()
		overlay, err := r.overlay(m)
		if err != nil {
			return err
		}
		killer := ""
		for _, tg := range m.Tests {
			o, err := r.test(tg, overlay)
			if err != nil {
				return fmt.Errorf("mutant %s: %w", m.Name, err)
			}
			if !o.passed {
				killer = fmt.Sprintf("%s %s", tg.Pkg, strings.Join(topLevel(o.failed), ","))
				if len(o.failed) == 0 {
					killer = fmt.Sprintf("%s -run %q (no test named: crash or timeout)", tg.Pkg, tg.Run)
				}
				break
			}
		}
		d := time.Since(t0).Round(time.Second)
		if killer == "" {
			survivors = append(survivors, m.Name)
			fmt.Printf("SURVIVED %-40s %6s  %s (%s)\n", m.Name, d, m.File, m.Why)
			continue
		}
		fmt.Printf("killed   %-40s %6s  by %s\n", m.Name, d, killer)
	}
	fmt.Printf("mutants: %d run of %d listed, %d killed, %d survived (%s)\n", len(ms), listed,
		len(ms)-len(survivors), len(survivors), time.Since(start).Round(time.Second))
	// For `make reliability`, which sums its suites' "reliability:" lines into one.
	fmt.Printf("reliability: mutants=%d survived=%d\n", len(ms), len(survivors))
	if len(survivors) > 0 {
		return fmt.Errorf("%d mutants survived: %s", len(survivors), strings.Join(survivors, ", "))
	}
	return nil
}

// overlay writes m's mutated file and the overlay file naming it; it returns the overlay's path.
func (r *runner) overlay(m Mutant) (string, error) {
	path := filepath.Join(r.root, m.File)
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	mutated, err := m.Apply(string(src))
	if err != nil {
		return "", err
	}
	dir := filepath.Join(r.tmp, m.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	file := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(file, []byte(mutated), 0o644); err != nil {
		return "", err
	}
	js, err := json.Marshal(map[string]map[string]string{"Replace": {path: file}})
	if err != nil {
		return "", err
	}
	ov := filepath.Join(dir, "overlay.json")
	return ov, os.WriteFile(ov, js, 0o644)
}

var failRE = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// test builds tg's package (with overlay, unless "") and runs the tests matching tg.Run, verbosely,
// in the package's directory as go test does. A build failure is an error: a mutant must compile.
func (r *runner) test(tg Target, overlay string) (outcome, error) {
	r.built++
	bin := filepath.Join(r.tmp, fmt.Sprintf("t%d.test", r.built))
	args := []string{"test", "-c", "-o", bin}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	build := exec.Command("go", append(args, tg.Pkg)...)
	build.Dir = r.root
	if out, err := build.CombinedOutput(); err != nil {
		return outcome{}, fmt.Errorf("build %s: %w\n%s", tg.Pkg, err, out)
	}
	defer os.Remove(bin)
	if _, err := os.Stat(bin); err != nil {
		return outcome{}, fmt.Errorf("%s has no tests", tg.Pkg)
	}
	cmd := exec.Command(bin, "-test.run", tg.Run, "-test.count", "1", "-test.v",
		"-test.timeout", r.timeout.String())
	cmd.Dir = filepath.Join(r.root, tg.Pkg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return outcome{}, err
	}
	o := outcome{passed: err == nil, out: out.Bytes(), ran: bytes.Contains(out.Bytes(), []byte("=== RUN"))}
	for _, m := range failRE.FindAllSubmatch(o.out, -1) {
		o.failed = append(o.failed, string(m[1]))
	}
	if r.verbose {
		os.Stdout.Write(o.out)
	}
	return o, nil
}

// topLevel keeps the names of top-level tests (not subtests), at most three.
func topLevel(names []string) []string {
	var out []string
	for _, n := range names {
		if !strings.Contains(n, "/") && len(out) < 3 {
			out = append(out, n)
		}
	}
	return out
}
