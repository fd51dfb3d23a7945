package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `# a comment
== first fast
why: one
why: and two
file: a/b.go
test: ./a ^TestA$
test: ./b ^TestB
--- original
	x := 1

	y := x
+++ mutant
	y := 2
# between mutants
== second
file: a/c.go
test: ./a TestC
--- original
	return nil
+++ mutant
`

func TestParse(t *testing.T) {
	ms, err := Parse(strings.NewReader(sample))
	require.NoError(t, err)
	require.Len(t, ms, 2)
	assert.Equal(t, Mutant{Name: "first", Why: "one and two", File: "a/b.go", Fast: true, Line: 2,
		Tests:    []Target{{"./a", "^TestA$"}, {"./b", "^TestB"}},
		Original: "\tx := 1\n\n\ty := x\n", Mutated: "\ty := 2\n", mutatedSet: true}, ms[0])
	assert.Equal(t, "second", ms[1].Name)
	assert.False(t, ms[1].Fast)
	assert.Empty(t, ms[1].Mutated, "a mutant may delete its snippet")
}

func TestParseRejects(t *testing.T) {
	for name, list := range map[string]string{
		"no file":     "== a\ntest: ./a T\n--- original\nx\n+++ mutant\ny\n",
		"no test":     "== a\nfile: a.go\n--- original\nx\n+++ mutant\ny\n",
		"no original": "== a\nfile: a.go\ntest: ./a T\n--- original\n+++ mutant\ny\n",
		"no mutant":   "== a\nfile: a.go\ntest: ./a T\n--- original\nx\n",
		"no change":   "== a\nfile: a.go\ntest: ./a T\n--- original\nx\n+++ mutant\nx\n",
		"twice":       "== a\nfile: a.go\ntest: ./a T\n--- original\nx\n+++ mutant\ny\n== a\nfile: a.go\ntest: ./a T\n--- original\nx\n+++ mutant\ny\n",
		"bad name":    "== A b c\n",
		"bad test":    "== a\nfile: a.go\ntest: a T\n",
		"bad pattern": "== a\nfile: a.go\ntest: ./a (\n",
		"unknown key": "== a\ncolour: red\n",
		"stray line":  "hello\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(list))
			assert.ErrorIs(t, err, ErrList)
		})
	}
}

func TestApply(t *testing.T) {
	m := Mutant{Name: "m", File: "f.go", Original: "a := 1\n", Mutated: "a := 2\n"}
	got, err := m.Apply("x\na := 1\ny\n")
	require.NoError(t, err)
	assert.Equal(t, "x\na := 2\ny\n", got)
	_, err = m.Apply("x\n")
	assert.ErrorIs(t, err, ErrList, "a snippet that is gone")
	_, err = m.Apply("a := 1\na := 1\n")
	assert.ErrorIs(t, err, ErrList, "an ambiguous snippet")
}

// TestListIsCurrent: every mutant of the repository's list parses and still finds its snippet
// exactly once (make mutants runs them).
func TestListIsCurrent(t *testing.T) {
	f, err := os.Open("mutants.txt")
	require.NoError(t, err)
	defer f.Close()
	ms, err := Parse(f)
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	for _, m := range ms {
		src, err := os.ReadFile(filepath.Join("..", "..", "..", m.File))
		require.NoError(t, err, m.Name)
		_, err = m.Apply(string(src))
		assert.NoError(t, err)
		for _, tg := range m.Tests {
			assert.DirExists(t, filepath.Join("..", "..", "..", tg.Pkg), m.Name)
		}
	}
}
