#!/usr/bin/env bash
# nvrtc-lib.sh DEST: puts NVRTC (libnvrtc.so.11.2 and its builtins library) from Debian's CUDA 11.8
# packages under DEST (default .gpu/nvrtc) without installing anything, for the check that every
# project kernel compiles (`make kernels-check`). NVRTC needs no GPU. Prints the library's path.
#
# The .debs (~16 MB) are kept in GMLAKE_CACHE (default /var/cache/gmlake, else ~/.cache/gmlake).
# They are in Debian's non-free component, which this script enables when it is missing
# (scripts/debian-packages.sh).
set -euo pipefail

dest=${1:-.gpu/nvrtc}
lib=$dest/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2
if [[ -f $lib ]]; then
	echo "$lib"
	exit 0
fi

source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/debian-packages.sh"
cache=$(debian_cache)

pkgs=(libnvrtc11.2 libnvrtc-builtins11.8)
missing=()
for p in "${pkgs[@]}"; do
	ls "$cache/${p}"_*.deb >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
	if ! apt-cache show "${missing[0]}" >/dev/null 2>&1; then
		debian_nonfree nvrtc-lib
		$sudo apt-get update -qq
	fi
	(cd "$cache" && apt-get download -q "${missing[@]}" >&2)
fi

mkdir -p "$dest"
for p in "${pkgs[@]}"; do
	deb=$(ls "$cache/${p}"_*.deb | tail -n1)
	echo "nvrtc-lib: extracting $deb into $dest" >&2
	dpkg-deb -x "$deb" "$dest"
done
test -f "$lib"
echo "$lib"
