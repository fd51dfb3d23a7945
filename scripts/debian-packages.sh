# debian-packages.sh, sourced by gpu/tools/nvrtc-lib.sh: what it needs
# to take files out of Debian's CUDA packages without installing them. Defines
#   sudo            "sudo" when not root and sudo exists, else empty
#   debian_cache    echoes the folder the .debs are kept in: GMLAKE_CACHE (default
#                   /var/cache/gmlake), else ~/.cache/gmlake when that one is not writable
#   debian_nonfree  adds `contrib non-free` to Debian's apt source when missing (idempotent); the
#                   CUDA packages are in those components. $1 prefixes its messages.

sudo=""
if [[ $(id -u) != 0 ]] && command -v sudo >/dev/null; then
	sudo=sudo
fi

debian_cache() {
	local cache=${GMLAKE_CACHE:-/var/cache/gmlake}
	if ! mkdir -p "$cache" 2>/dev/null || [[ ! -w $cache ]]; then
		cache=${XDG_CACHE_HOME:-$HOME/.cache}/gmlake
		mkdir -p "$cache"
	fi
	echo "$cache"
}

debian_nonfree() {
	local sources=/etc/apt/sources.list.d/debian.sources comp
	if [[ ! -f $sources ]]; then
		echo "$1: $sources not found; make sure Debian's non-free component is enabled" >&2
		return 0
	fi
	for comp in contrib non-free; do
		if grep -q '^Components:' "$sources" && ! grep -Eq "^Components:.*[[:space:]]$comp([[:space:]]|\$)" "$sources"; then
			echo "$1: adding '$comp' to $sources" >&2
			$sudo sed -i "/^Components:/ s/\$/ $comp/" "$sources"
		fi
	done
}
