#!/bin/sh
# The watcher's part of the bench: the same streams bare and under
# `useonce` watching from outside (a static copy, restic backup of the same
# file when restic is installed).  Prints, per case: seconds bare and
# watched, the throughput ratio, and the watcher's own line (bytes moved,
# dropped, flushed, its CPU time and CPU ms per GiB moved).
#
#   bench/watch.sh BUILD_DIR [MIB]	(default 1024 MiB; run as root or the files' owner)
set -eu

build=$1
mib=${2:-1024}
dir=$build/uotest-watchbench-$$
mkdir -p "$dir/tmp"
trap 'rm -rf "$dir"' EXIT
io=$build/tests/static_io
uo=$build/useonce

cold() {
	python3 -c 'import os, sys
for f in sys.argv[1:]:
    fd = os.open(f, os.O_RDONLY); os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$@"
}

secs() {
	start=$(date +%s.%N)
	"$@"
	end=$(date +%s.%N)
	echo "$end - $start" | bc
}

head -c "$((mib << 20))" /dev/urandom >"$dir/src"
cold "$dir/src"

run_case() {
	name=$1
	shift
	prep=$1
	shift
	eval "$prep"
	cold "$dir/src"
	bare=$(secs "$@" 2>/dev/null)
	eval "$prep"
	cold "$dir/src"
	watched=$(secs "$uo" --watch --stats "$@" 2>"$dir/stats")
	printf 'watch-bench: %-14s %6s MiB  bare %6.2f s  watched %6.2f s  ratio %.2f\n' \
		"$name" "$mib" "$bare" "$watched" "$(echo "$bare / $watched" | bc -l)"
	sed 's/^/watch-bench:   /' "$dir/stats"
}

run_case static-copy 'rm -f "$dir/dst"; sync' "$io" copy "$dir/src" "$dir/dst"
run_case static-read ':' "$io" read "$dir/src"
if command -v restic >/dev/null 2>&1; then
	export RESTIC_PASSWORD=bench TMPDIR="$dir/tmp"
	run_case restic-backup \
		'rm -rf "$dir/repo"; restic -q --repo "$dir/repo" init; sync' \
		restic -q --no-cache --repo "$dir/repo" backup "$dir/src"
fi
