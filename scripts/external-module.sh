#!/usr/bin/env bash
# external-module.sh: proves that gmlake is usable from a user's module with a plain build. It
# creates a new module in a temporary folder, outside this repository, that requires gmlake
# (`replace` to this checkout, as `go get` of a release would resolve it), builds it with
# CGO_ENABLED=0, no build tags, no CUDA toolkit and no C compiler, and runs a program that
# allocates through gmlake.NewAllocator(): the CUDA driver where a GPU is usable, host memory
# otherwise. The program prints which driver it got; the run must succeed either way. With
# FAKE_LIBCUDA set (a path to driver/cuda/testdata/fakecuda.c built as a library) the same binary
# runs again with that library as the CUDA driver and must pick the CUDA driver.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/go.mod" <<MOD
module example.com/gmlake-user

go 1.26

require github.com/gmlake/gmlake v0.0.0

replace github.com/gmlake/gmlake => $repo
MOD

cat >"$work/main.go" <<'GO'
// A user's program: one allocator on the default driver, a few allocations of it, its statistics.
package main

import (
	"fmt"
	"log"

	"github.com/gmlake/gmlake"
)

func main() {
	a, err := gmlake.NewAllocator(gmlake.WithCapacity(256 << 20))
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	var held []interface{ Uintptr() uintptr }
	for _, n := range []int64{1 << 20, 6 << 20, 20 << 20} {
		m, err := a.Get(n)
		if err != nil {
			log.Fatal(err)
		}
		held = append(held, m)
	}
	for i, m := range held {
		if m.Uintptr() == 0 {
			log.Fatalf("allocation %d has no address", i)
		}
	}
	if err := a.Check(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("driver %T, granularity %d, %d blocks held\n", a.Driver(), a.Granularity(), len(held))
}
GO

cd "$work"
# No CUDA anything and no C toolchain: the build must not need them.
unset CGO_CFLAGS CGO_LDFLAGS CGO_CPPFLAGS
export CGO_ENABLED=0 CC=/nonexistent/cc GOFLAGS=-mod=mod
go mod tidy 2>/dev/null
go build -o gmlake-user .
go version -m gmlake-user | grep -q 'CGO_ENABLED=0' || { echo "external-module: not a CGO_ENABLED=0 binary" >&2; exit 1; }
go vet .
./gmlake-user
if [[ -n ${FAKE_LIBCUDA:-} ]]; then
	out=$(GMLAKE_LIBCUDA=$FAKE_LIBCUDA ./gmlake-user)
	echo "$out (GMLAKE_LIBCUDA=$FAKE_LIBCUDA)"
	[[ $out == "driver *cuda.Driver,"* ]] || { echo "external-module: the CUDA driver was not picked" >&2; exit 1; }
fi
echo "external-module: a new module outside the repository built with CGO_ENABLED=0 and no flags, and ran"
