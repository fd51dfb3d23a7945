#!/usr/bin/env bash
# nvrtc-lib.sh DEST: puts NVRTC (libnvrtc.so.11.2 and its builtins library) from Debian's CUDA 11.8
# packages under DEST (default .gpu/nvrtc) without installing anything, for the check that every
# project kernel compiles (`make kernels-check`). NVRTC needs no GPU. Prints the library's path.
#
# The .debs (~16 MB) are kept in GMLAKE_CACHE (default /var/cache/gmlake, else ~/.cache/gmlake).
# They are in Debian's non-free component: scripts/cuda-headers.sh enables it when it is missing;
# this script does the same, idempotently.
set -euo pipefail

dest=${1:-.gpu/nvrtc}
lib=$dest/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2
if [[ -f $lib ]]; then
	echo "$lib"
	exit 0
fi

sudo=""
if [[ $(id -u) != 0 ]] && command -v sudo >/dev/null; then
	sudo=sudo
fi
cache=${GMLAKE_CACHE:-/var/cache/gmlake}
if ! mkdir -p "$cache" 2>/dev/null || [[ ! -w $cache ]]; then
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/gmlake
	mkdir -p "$cache"
fi

pkgs=(libnvrtc11.2 libnvrtc-builtins11.8)
missing=()
for p in "${pkgs[@]}"; do
	ls "$cache/${p}"_*.deb >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
	if ! apt-cache show "${missing[0]}" >/dev/null 2>&1; then
		sources=/etc/apt/sources.list.d/debian.sources
		if [[ -f $sources ]]; then
			for comp in contrib non-free; do
				if grep -q '^Components:' "$sources" && ! grep -Eq "^Components:.*[[:space:]]$comp([[:space:]]|\$)" "$sources"; then
					echo "nvrtc-lib: adding '$comp' to $sources" >&2
					$sudo sed -i "/^Components:/ s/\$/ $comp/" "$sources"
				fi
			done
		fi
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
