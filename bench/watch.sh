#!/bin/sh
# Part 6 of `make bench`: programs a preload cannot reach, guarded from
# outside by `useonce --watch`.  The same streams bare, under Debian's
# nocache (which cannot reach them either: the baseline a user has today)
# and watched: a static program reading, copying with copy_file_range and
# with pread/pwrite, writing; restic backup and restore of the same file
# when restic is installed.
#
# Per case, the median of UO_WATCH_BENCH_RUNS runs (3; 1 with
# UO_BENCH_SMOKE=1) of each: seconds, the throughput ratio bare/watched, the peak of
# dirty + writeback pages (the cgroup's memory.stat, sampled every 20 ms),
# and the watcher's own CPU time, per GiB streamed (the file's size: a
# copy or a backup streams it once, whatever it moves on the way).
#
#   bench/watch.sh BUILD_DIR [MIB]	(default 1024 MiB, 64 with UO_BENCH_SMOKE=1)
#
# As root the programs run in a memory cgroup of their own (no tighter limit
# than 4 GiB: this part measures cost, the tests measure the hot set), so
# that dirty + writeback are the streams' own; otherwise those figures are
# the machine's (/proc/meminfo) and say so.  Writes markdown to
# $UO_BENCH_RESULTS/watch.md when that is set.
set -u

build=$1
smoke=${UO_BENCH_SMOKE:-0}
if [ "$smoke" = 1 ]; then
	mib=${2:-64}
	runs=${UO_WATCH_BENCH_RUNS:-1}
else
	mib=${2:-1024}
	runs=${UO_WATCH_BENCH_RUNS:-3}
fi
build=$(cd "$build" && pwd) || exit 1
dir=$build/uotest-watchbench-$$
io=$build/tests/static_io
uo=$build/useonce
nocache=/usr/lib/nocache/nocache.so
cg=""
mon=""
out=${UO_BENCH_RESULTS:+$UO_BENCH_RESULTS/watch.md}

cleanup() {
	[ -n "$mon" ] && kill "$mon" 2>/dev/null
	rm -rf "$dir"
	if [ -n "$cg" ]; then
		rmdir "$cg" 2>/dev/null || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if [ ! -x "$io" ] || [ ! -x "$uo" ]; then
	echo "watch-bench: $io or $uo missing: build with make tests first" >&2
	exit 1
fi
mkdir -p "$dir/tmp" || exit 1
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/memory ]; then
	cg=/sys/fs/cgroup/memory/uobench-watch-$$
	if mkdir "$cg" 2>/dev/null; then
		echo $((4096 << 20)) >"$cg/memory.limit_in_bytes"
	else
		cg=""
	fi
fi

# Dirty + writeback now, in bytes: the cgroup's, or the machine's.
dirty_wb() {
	if [ -n "$cg" ]; then
		awk '/^dirty |^writeback / { s += $2 } END { print s + 0 }' "$cg/memory.stat"
	else
		awk '/^Dirty:|^Writeback:/ { s += $2 * 1024 } END { print s + 0 }' /proc/meminfo
	fi
}

cold() {
	python3 -c 'import os, sys
for f in sys.argv[1:]:
    if os.path.isfile(f):
        fd = os.open(f, os.O_RDONLY); os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$@"
}

# run OUT CMD...: runs CMD (in the cgroup), prints "seconds peak_dirty_wb_bytes".
run() {
	outf=$1
	shift
	: >"$dir/peak"
	(while :; do dirty_wb >>"$dir/peak"; sleep 0.02; done) &
	mon=$!
	start=$(date +%s.%N)
	if [ -n "$cg" ]; then
		sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg" "$@" >/dev/null 2>"$outf"
	else
		"$@" >/dev/null 2>"$outf"
	fi
	rc=$?
	end=$(date +%s.%N)
	kill "$mon" 2>/dev/null
	wait "$mon" 2>/dev/null
	mon=""
	[ "$rc" = 0 ] || echo "watch-bench: exit status $rc: $*" >&2
	echo "$(echo "$end - $start" | bc) $(sort -n "$dir/peak" | tail -n 1)"
}

mibs() {
	echo "$1" | awk '{ printf "%.0f", $1 / 1048576 }'
}

echo "watch-bench: making a $mib MiB file"
head -c "$((mib << 20))" /dev/urandom >"$dir/src"
# Written back before anything is timed: the first run must not share the disk with it.
sync
cold "$dir/src"

{
	echo "## 6. Programs no preload reaches, watched from outside (bench/watch.sh)"
	echo
	echo "A static program (tests/helpers/static_io.c) and restic (Go) stream a $mib MiB file:"
	echo "bare, under Debian's nocache (it cannot reach them either), and under"
	echo "\`useonce --watch\`. Peak dirty + writeback is $( [ -n "$cg" ] && echo "the programs' memory cgroup's" || echo "the whole machine's (not root)"),"
	echo "sampled every 20 ms; CPU is the watcher's own time, per GiB of the file. Each figure"
	echo "is from the median run (by seconds) of $runs."
	echo "$( [ "$(id -u)" = 0 ] && echo "As root the watcher uses fanotify; its CPU time grows with every other process's opens on the same filesystem." || echo "Not root: no fanotify, descriptors are sampled only.")"
	echo
	echo "Of the watcher's CPU, the part spent in its advice calls (fadvise, sync_file_range) is"
	echo "the kernel freeing pages and submitting writeback, which reclaim and the flusher"
	echo "threads would do otherwise; the rest is watching (sampling, cachestat, fanotify)."
	echo
	echo "| case | bare s | nocache s | watched s | ratio bare/watched | peak dirty+wb MiB bare / watched | watcher CPU s | CPU ms per GiB | of which advice |"
	echo "|---|---|---|---|---|---|---|---|---|"
} >"$dir/md"

# median PREP ERRFILE CMD...: runs CMD $runs times (PREP before each), prints
# "seconds peak run" of the median run; ERRFILE.N holds run N's stderr.
median() {
	mprep=$1
	merr=$2
	shift 2
	: >"$dir/runs"
	r=1
	while [ "$r" -le "$runs" ]; do
		eval "$mprep"
		cold "$dir/src"
		echo "$(run "$merr.$r" "$@") $r" >>"$dir/runs"
		r=$((r + 1))
	done
	sort -n "$dir/runs" | sed -n "$(((runs + 1) / 2))p"
}

# case NAME PREP CMD...: PREP (a shell snippet) runs before each run.
bench_case() {
	name=$1
	prep=$2
	shift 2
	bare=$(median "$prep" "$dir/err" "$@")
	if [ -r "$nocache" ]; then
		nc=$(median "$prep" "$dir/err" env LD_PRELOAD="$nocache" "$@")
	else
		nc="- - -"
	fi
	watched=$(median "$prep" "$dir/stats" "$uo" --watch --stats "$@")
	cp "$dir/stats.${watched##* }" "$dir/stats"
	bare=${bare% *}
	watched=${watched% *}
	bs=${bare%% *}
	ws=${watched%% *}
	ncs=${nc%% *}
	[ "$ncs" = - ] || ncs=$(printf '%.2f' "$ncs")
	cpu=$(sed -n 's/.*cpu \([0-9.]*\) s.*/\1/p' "$dir/stats" | head -n 1)
	cpu=${cpu:-0}
	# The watcher's own split, as a fraction: "(T ms/GiB; ... advice A, watching W)".
	tot=$(sed -n 's/.*cpu [0-9.]* s (\([0-9.]*\) ms\/GiB.*/\1/p' "$dir/stats" | head -n 1)
	adv=$(sed -n 's/.*in advice \([0-9.]*\),.*/\1/p' "$dir/stats" | head -n 1)
	ratio=$(echo "$bs / $ws" | bc -l)
	per=$(echo "$cpu * 1000 * 1024 / $mib" | bc -l)
	if [ -n "$tot" ] && [ -n "$adv" ] && [ "$(echo "$tot > 0" | bc)" = 1 ]; then
		advper=$(echo "$per * $adv / $tot" | bc -l)
	else
		advper=0
	fi
	printf 'watch-bench: %-15s bare %6.2f s  nocache %6s s  watched %6.2f s  ratio %.2f  peak dirty+wb %s / %s MiB  cpu %s s (%.0f ms/GiB)\n' \
		"$name" "$bs" "$ncs" "$ws" "$ratio" "$(mibs "${bare#* }")" \
		"$(mibs "${watched#* }")" "$cpu" "$per"
	sed 's/^/watch-bench:   /' "$dir/stats"
	printf '| %s | %.2f | %s | %.2f | %.2f | %s / %s | %s | %.0f | %.0f |\n' "$name" "$bs" \
		"$ncs" "$ws" "$ratio" "$(mibs "${bare#* }")" "$(mibs "${watched#* }")" \
		"$cpu" "$per" "$advper" >>"$dir/md"
}

bench_case static-read ':' "$io" read "$dir/src"
bench_case static-copy 'rm -f "$dir/dst"' "$io" copy "$dir/src" "$dir/dst"
bench_case static-pcopy 'rm -f "$dir/dst"' "$io" pcopy "$dir/src" "$dir/dst"
bench_case static-write 'rm -f "$dir/dst"' "$io" write "$dir/dst" "$mib"
if command -v restic >/dev/null 2>&1; then
	export RESTIC_PASSWORD=bench TMPDIR="$dir/tmp"
	repo="$dir/repo"
	bench_case restic-backup 'rm -rf "$repo"; restic -q --repo "$repo" init >/dev/null; sync' \
		restic -q --no-cache --repo "$repo" backup "$dir/src"
	bench_case restic-restore 'rm -rf "$dir/out"; cold "$repo"/data/*/*' \
		restic -q --no-cache --repo "$repo" restore latest --target "$dir/out"
else
	echo "(restic is not installed: its cases are left out.)" >>"$dir/md"
fi
echo >>"$dir/md"
cat "$dir/md"
[ -n "$out" ] && cp "$dir/md" "$out"
exit 0
