#!/usr/bin/env bash
# cuda-headers.sh DEST: puts CUDA's driver-API headers (cuda.h, cudaTypedefs.h) and the link stub
# libcuda.so under DEST (default .cuda), taken from Debian's nvidia-cuda-dev package, without
# installing the CUDA toolkit. That is all cgo needs to build the `cuda`-tagged packages; at run time
# the stub's soname, libcuda.so.1, resolves to the real driver's library.
#
# The .deb (~777 MB) is kept in GMLAKE_CACHE (default /var/cache/gmlake, else ~/.cache/gmlake) so a
# second run on the same machine downloads nothing. nvidia-cuda-dev is in Debian's non-free
# component: if the Debian apt source lacks `contrib non-free`, they are added (idempotently).
set -euo pipefail

dest=${1:-.cuda}
inc=$dest/usr/include
stub=$dest/usr/lib/x86_64-linux-gnu/stubs/libcuda.so

if [[ -f $inc/cuda.h && -f $inc/cudaTypedefs.h && -f $stub ]]; then
	exit 0
fi

source "$(dirname "${BASH_SOURCE[0]}")/debian-packages.sh"
cache=$(debian_cache)

deb=$(ls "$cache"/nvidia-cuda-dev_*.deb 2>/dev/null | tail -n1 || true)
if [[ -z $deb ]]; then
	debian_nonfree cuda-headers
	$sudo apt-get update -qq
	# apt-get download writes into the current directory; a partial download never gets the final name.
	(cd "$cache" && apt-get -o APT::Sandbox::User=root download -q nvidia-cuda-dev)
	deb=$(ls "$cache"/nvidia-cuda-dev_*.deb | tail -n1)
fi

echo "cuda-headers: extracting from $deb into $dest" >&2
mkdir -p "$dest"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dest" \
	./usr/include/cuda.h ./usr/include/cudaTypedefs.h ./usr/lib/x86_64-linux-gnu/stubs/libcuda.so
test -f "$inc/cuda.h" && test -f "$stub"
