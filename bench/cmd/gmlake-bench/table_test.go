package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/bench"
)

// The default table fits 120 columns with every optional column, the longest trace name of
// ../shared/traces, the longest allocator name and large figures; --wide has every figure.
func TestTableWidth(t *testing.T) {
	big, calls, msIt, exact := uint64(123)<<30+1<<29, 12345.6, 9999.9, false
	ratio := 1.234
	r := bench.Report{Trace: "opt1.3b-lora-ckpt-off.noweights.trace.gz", Allocator: "gmlake/warmup=128MiB",
		PeakActive: big, PeakReserved: big, Fragmentation: 0.5, MinCapacity: &big, MinCapacityExact: &exact,
		CapacityOverActive: &ratio, SteadyDriverCallsPerIter: &calls, SteadyDriverMsPerIter: &msIt,
		OOMAt: &bench.OOMEvent{Event: 12345678}}
	other := r
	other.Allocator = "gmlake-unmarked"
	reports := []bench.Report{r, other}
	cols := tableColumns{minCapacity: true, capped: true, repeat: true}

	var narrow bytes.Buffer
	require.NoError(t, writeTable(&narrow, reports, cols))
	lines := strings.Split(strings.TrimRight(narrow.String(), "\n"), "\n")
	require.Len(t, lines, 4, "a caption, the header, two rows")
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), 120, "%q", l)
	}
	assert.Contains(t, lines[2], "opt1.3b-lora-ckpt-off.noweights ", "the name without its ending")
	assert.NotContains(t, lines[3], "opt1.3b", "the name once per group of rows")
	assert.Contains(t, lines[2], "<=123.50", "an upper bound says so")
	assert.True(t, strings.HasSuffix(lines[2], " 12345678"), "the out-of-memory event")

	cols.wide = true
	var wide bytes.Buffer
	require.NoError(t, writeTable(&wide, reports, cols))
	assert.Greater(t, len(strings.SplitN(wide.String(), "\n", 2)[0]), 120)
	assert.Contains(t, wide.String(), "steady its forced/novel/all")
	assert.Contains(t, wide.String(), "converged after")
}
