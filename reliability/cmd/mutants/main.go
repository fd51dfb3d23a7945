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
//	go run ./reliability/cmd/mutants [-fast] [-run REGEXP] [-list FILE] [-timeout 5m] [-p N] [-v]
//
// -fast runs the mutants marked fast (CI's subset); `make mutants` runs them all. -p mutants run at
// once (default GOMAXPROCS); the report keeps the list's order.
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
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	var (
		list    = flag.String("list", "reliability/cmd/mutants/mutants.txt", "the mutant list, relative to the module root")
		fast    = flag.Bool("fast", false, "only the mutants marked fast")
		run     = flag.String("run", "", "only the mutants whose name matches this regular expression")
		timeout = flag.Duration("timeout", 5*time.Minute, "limit for one test run")
		verbose = flag.Bool("v", false, "print the output of every test run")
		par     = flag.Int("p", runtime.GOMAXPROCS(0), "mutants run at once")
	)
	flag.Parse()
	if err := mainErr(*list, *fast, *run, *timeout, *verbose, *par); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

func mainErr(list string, fast bool, run string, timeout time.Duration, verbose bool, parallel int) error {
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
	r := &runner{root: root, tmp: tmp, timeout: timeout, verbose: verbose, parallel: parallel}
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
	parallel  int
	built     atomic.Int64
	outMu     sync.Mutex // serializes the verbose test output
}

// outcome of one test run.
type outcome struct {
	passed bool
	failed []string // names of the tests that failed
	ran    bool     // at least one test ran
	out    []byte
}

// verdict is what became of one mutant.
type verdict struct {
	killer string // "" when it survived
	took   time.Duration
	err    error
}

func (r *runner) runAll(ms []Mutant, listed int) error {
	start := time.Now()
	if err := r.checkUnmutated(ms); err != nil {
		return err
	}
	// The mutants run in parallel (each builds its own test binaries, so the builds of one overlap
	// the links and test runs of another); the report keeps the list's order.
	verdicts := make([]chan verdict, len(ms))
	for i := range verdicts {
		verdicts[i] = make(chan verdict, 1)
	}
	work, stop := make(chan int), make(chan struct{})
	var wg sync.WaitGroup
	for range max(1, r.parallel) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				verdicts[i] <- r.mutant(ms[i])
			}
		}()
	}
	go func() {
		defer close(work)
		for i := range ms {
			select {
			case work <- i:
			case <-stop: // an error: no new mutant starts
				return
			}
		}
	}()
	defer wg.Wait()
	var survivors []string
	for i, m := range ms {
		v := <-verdicts[i]
		switch {
		case v.err != nil:
			close(stop)
			return fmt.Errorf("mutant %s: %w", m.Name, v.err)
		case v.killer == "":
			survivors = append(survivors, m.Name)
			fmt.Printf("SURVIVED %-40s %6s  %s (%s)\n", m.Name, v.took.Round(time.Second), m.File, m.Why)
		default:
			fmt.Printf("killed   %-40s %6s  by %s\n", m.Name, v.took.Round(time.Second), v.killer)
		}
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

// checkUnmutated runs every target of ms on the tree as it is: each must pass, or a failure under
// a mutant means nothing. Each package is built once for all its targets.
func (r *runner) checkUnmutated(ms []Mutant) error {
	var pkgs []string
	targets := map[string][]Target{}
	seen := map[Target]bool{}
	for _, m := range ms {
		for _, tg := range m.Tests {
			if seen[tg] {
				continue
			}
			seen[tg] = true
			if targets[tg.Pkg] == nil {
				pkgs = append(pkgs, tg.Pkg)
			}
			targets[tg.Pkg] = append(targets[tg.Pkg], tg)
		}
	}
	for _, pkg := range pkgs {
		bin, err := r.build(pkg, "")
		if err != nil {
			return fmt.Errorf("unmutated %s: %w", pkg, err)
		}
		for _, tg := range targets[pkg] {
			o, err := r.run(bin, tg)
			if err != nil {
				os.Remove(bin)
				return fmt.Errorf("unmutated %s -run %q: %w", tg.Pkg, tg.Run, err)
			}
			if !o.passed || !o.ran {
				os.Remove(bin)
				os.Stderr.Write(o.out)
				return fmt.Errorf("unmutated %s -run %q: passed=%v ran a test=%v: fix the tree or the list first", tg.Pkg, tg.Run, o.passed, o.ran)
			}
		}
		os.Remove(bin)
	}
	return nil
}

// mutant applies m on an overlay and runs its targets until one fails (the killer); a package
// named by several targets is built once.
func (r *runner) mutant(m Mutant) verdict {
	t0 := time.Now()
	overlay, err := r.overlay(m)
	if err != nil {
		return verdict{err: err}
	}
	bins := map[string]string{}
	defer func() {
		for _, bin := range bins {
			os.Remove(bin)
		}
	}()
	for _, tg := range m.Tests {
		bin, ok := bins[tg.Pkg]
		if !ok {
			if bin, err = r.build(tg.Pkg, overlay); err != nil {
				return verdict{err: err}
			}
			bins[tg.Pkg] = bin
		}
		o, err := r.run(bin, tg)
		if err != nil {
			return verdict{err: err}
		}
		if !o.passed {
			killer := fmt.Sprintf("%s %s", tg.Pkg, strings.Join(topLevel(o.failed), ","))
			if len(o.failed) == 0 {
				killer = fmt.Sprintf("%s -run %q (no test named: crash or timeout)", tg.Pkg, tg.Run)
			}
			return verdict{killer: killer, took: time.Since(t0)}
		}
	}
	return verdict{took: time.Since(t0)}
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

// build builds pkg's test binary (with overlay, unless "") and returns its path. A build failure is
// an error: a mutant must compile. Vet is off: make test vets the tree, and a mutant is judged by
// its tests alone.
func (r *runner) build(pkg, overlay string) (string, error) {
	bin := filepath.Join(r.tmp, fmt.Sprintf("t%d.test", r.built.Add(1)))
	args := []string{"test", "-c", "-vet=off", "-o", bin}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	build := exec.Command("go", append(args, pkg)...)
	build.Dir = r.root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", pkg, err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s has no tests", pkg)
	}
	return bin, nil
}

// run runs the tests of bin (tg's package) matching tg.Run, verbosely, in the package's directory
// as go test does.
func (r *runner) run(bin string, tg Target) (outcome, error) {
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
		r.outMu.Lock()
		os.Stdout.Write(o.out)
		r.outMu.Unlock()
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
