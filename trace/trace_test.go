package trace

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = "# workload demo torch x\na 0 100 0\ni 0\na 1 4096 7\nf 0\nf 1\ni 1\n"

func TestReadPlainAndGzipAgree(t *testing.T) {
	plain, err := Read(strings.NewReader(sample))
	require.NoError(t, err)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err = zw.Write([]byte(sample))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	zipped, err := Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, plain, zipped)
	assert.Equal(t, "demo", plain.Name)
	assert.Equal(t, []Event{{Alloc, 0, 100, 0}, {Iter, 0, 0, 0}, {Alloc, 1, 4096, 7}, {Free, 0, 0, 0}, {Free, 1, 0, 0}, {Iter, 1, 0, 0}}, plain.Events)
	assert.Equal(t, []int{1, 5}, plain.Iterations())
	require.NoError(t, plain.Validate())
}

func TestWriteRoundTrip(t *testing.T) {
	tr, err := Read(strings.NewReader(sample))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, tr))
	assert.Equal(t, sample, buf.String())
}

func TestWriteFileRoundTrip(t *testing.T) {
	tr, err := Read(strings.NewReader(sample))
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		zipped bool
	}{{"demo.trace", false}, {"demo.trace.gz", true}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name)
			require.NoError(t, WriteFile(path, tr))
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.zipped, bytes.HasPrefix(raw, []byte{0x1f, 0x8b}), "gzip by the name's suffix")
			back, err := ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tr, back)
		})
	}
	assert.Error(t, WriteFile(filepath.Join(t.TempDir(), "missing", "x.trace"), tr))
}

func TestBadLines(t *testing.T) {
	for _, line := range []string{"x 1", "a 1 2", "f", "a 1 -3 0", "i z"} {
		_, err := Read(strings.NewReader(line + "\n"))
		assert.ErrorIs(t, err, ErrFormat, line)
	}
}

func TestValidate(t *testing.T) {
	for _, bad := range []string{"a 0 1 0\na 0 1 0\n", "f 3\n", "a 0 0 0\n"} {
		tr, err := Read(strings.NewReader(bad))
		require.NoError(t, err)
		assert.ErrorIs(t, tr.Validate(), ErrFormat, bad)
	}
}

func TestSharedTraces(t *testing.T) {
	files, _ := filepath.Glob("../../shared/traces/*.trace.gz")
	if len(files) == 0 {
		if os.Getenv("CI") == "true" { // tracetest.Missing, which this package cannot import
			t.Fatal("CI=true: ../shared/traces not present")
		}
		t.Skip("../shared/traces not present")
	}
	for _, f := range files {
		tr, err := ReadFile(f)
		require.NoError(t, err, f)
		require.NoError(t, tr.Validate(), f)
		assert.NotEmpty(t, tr.Name, f)
		assert.NotEmpty(t, tr.Iterations(), f)
	}
}
