// Package tracetest finds the shared allocation traces for tests: $GMLAKE_TRACES, or
// ../shared/traces beside the repository (seen from a package one folder below the module root).
// Tests that need them skip when they are absent, except in CI (CI=true), where an absent trace
// fails the test: a suite that silently skips there proves nothing.
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

// InCI reports whether the tests run in CI (CI=true), where missing traces fail tests.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing ends a test that needs something absent: it fails in CI and skips elsewhere.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// Dir is where the shared traces are; without them it skips the test (fails it in CI).
func Dir(t testing.TB) string {
	dir := DirOrEmpty()
	if dir == "" {
		Missing(t, "no shared traces ($GMLAKE_TRACES or ../shared/traces)")
	}
	return dir
}

// Load reads the named shared trace, skipping the test when the traces are absent (failing it in
// CI).
func Load(t testing.TB, name string) *trace.Trace {
	tr, err := trace.ReadFile(filepath.Join(Dir(t), name))
	require.NoError(t, err)
	return tr
}
