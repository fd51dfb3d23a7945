// Package tracetest finds the shared allocation traces for tests: $GMLAKE_TRACES, or
// ../shared/traces beside the repository (seen from a package one folder below the module root).
// Tests that need them skip when they are absent.
package tracetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gmlake/gmlake/trace"
	"github.com/stretchr/testify/require"
)

// DirOrEmpty is where the shared traces are, or "" when they are absent.
func DirOrEmpty() string {
	dir := os.Getenv("GMLAKE_TRACES")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "traces")
	}
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}

// Dir is where the shared traces are; it skips the test when they are absent.
func Dir(t testing.TB) string {
	dir := DirOrEmpty()
	if dir == "" {
		t.Skip("no shared traces ($GMLAKE_TRACES or ../shared/traces)")
	}
	return dir
}

// Load reads the named shared trace, skipping the test when the traces are absent.
func Load(t testing.TB, name string) *trace.Trace {
	tr, err := trace.ReadFile(filepath.Join(Dir(t), name))
	require.NoError(t, err)
	return tr
}
