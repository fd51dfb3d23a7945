package pool

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUnknownAllocator: a name outside Names is a typed error, before any driver is touched. (The
// pools themselves are exercised on a GPU by gpu/graphexec's TestRewritesAndPoolsMatch.)
func TestUnknownAllocator(t *testing.T) {
	for _, name := range []string{"", "caching", "GMLAKE "} {
		_, err := New(name, nil, 0)
		assert.ErrorIs(t, err, ErrUnknown, "%q", name)
	}
}
