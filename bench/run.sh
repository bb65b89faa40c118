#!/bin/sh
# bench/run.sh: the three benchmarks of the seeds, one after the other
# (`make bench` and `make bench-smoke` call it after building them).
#
#   1. the use-once test in a memory cgroup   build/bench/use_once
#   2. cached reads and writes                build/bench/read_path
#   3. fork and exec                          build/bench/fork_exec
#   4. uncached I/O: the guard's or RWF_DONTCACHE  build/bench/uncached
#   5. files that come back, trees of files   build/bench/comeback
#   6. programs no preload reaches, watched   bench/watch.sh
#   7. copying a directory (issue 12)         build/bench/trees
#
# Each part prints markdown and writes it under the results directory;
# this script adds a header saying what ran where, joins them into
# bench.md and draws use-once.png with gnuplot.  UO_BENCH_SMOKE=1 runs
# everything at tiny sizes into results/smoke/.  The parts' own settings
# (sizes, repeats) are described at the top of each bench/*.c.
#
# Ctrl-C or a SIGTERM reaches the running part, which removes what it made
# (files, cgroups) before exiting; then this script stops.
set -u

build=${UO_BUILD:-build}
smoke=${UO_BENCH_SMOKE:-0}
results=${UO_BENCH_RESULTS:-bench/results}
if [ "$smoke" = 1 ] && [ -z "${UO_BENCH_RESULTS:-}" ]; then
	results=bench/results/smoke
fi
mkdir -p "$results" || exit 1
# A part that is skipped must not leave an older run's figures to be joined in.
rm -f "$results"/*.md "$results"/use-once.dat "$results"/use-once.gp \
	"$results"/use-once.png "$results"/gnuplot.log
UO_BUILD=$build
UO_BENCH_RESULTS=$results
UO_SRCDIR=${UO_SRCDIR:-$(pwd)}
export UO_BUILD UO_BENCH_RESULTS UO_SRCDIR UO_BENCH_SMOKE

child=""
interrupted=0
# A background part does not get the terminal's SIGINT from a shell
# script: pass every signal on as SIGTERM, which the parts clean up after.
on_signal() {
	interrupted=1
	[ -n "$child" ] && kill -TERM "$child" 2>/dev/null
}
trap on_signal INT TERM HUP

run_part() {
	"$@" &
	child=$!
	wait "$child"
	rc=$?
	# wait returns early when a signal arrives: let the part finish cleaning up.
	while kill -0 "$child" 2>/dev/null; do
		wait "$child"
		rc=$?
	done
	child=""
	return "$rc"
}

# What ran where: enough to know whether two results can be compared.
header() {
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	fs=$(df -PT "$build" 2>/dev/null | awk 'NR == 2 { print $2 }')
	dev=$(df -PT "$build" 2>/dev/null | awk 'NR == 2 { print $1 }')
	commit=$(git rev-parse --short HEAD 2>/dev/null || echo "not a git tree")
	dirty=$(git status --porcelain -- preload include Makefile 2>/dev/null | awk '{ print $2 }' |
		tr '\n' ' ')
	echo "# libuseonce benchmarks"
	echo
	if [ "$smoke" = 1 ]; then
		echo "**Smoke run** (\`make bench-smoke\`): tiny sizes, one repeat. It proves"
		echo "the bench works; its figures mean nothing."
		echo
	fi
	echo "- Command: \`make bench$( [ "$smoke" = 1 ] && echo "-smoke")\`, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- Library: commit $commit${dirty:+, built with uncommitted changes to: $dirty}"
	echo "- Machine: $(nproc) cores ($cpu), $mem, kernel $(uname -r), $fs on $dev"
	echo "- Tools: $(cp --version | head -n 1), $(ldd --version | head -n 1 | sed 's/^ldd //'),"
	echo "  $(gcc --version 2>/dev/null | head -n 1), $(valgrind --version 2>/dev/null || echo 'no valgrind'),"
	echo "  nocache $(dpkg-query -W -f '${Version}' nocache 2>/dev/null || echo 'not installed')"
	settings=$(env | grep '^USEONCE_' | tr '\n' ' ')
	echo "- Library settings: ${settings:-the defaults (no USEONCE_* variable set)}"
	if [ -z "${USEONCE_REUSE+set}" ]; then
		echo "  (parts 1, 2 and 4 add USEONCE_REUSE=0: every stream there is meant as a first one)"
	fi
	echo
}

start=$(date +%s)
header >"$results/header.md"
cat "$results/header.md"
status=0
for part in use_once read_path fork_exec uncached comeback trees; do
	[ "$interrupted" = 1 ] && break
	run_part "$build/bench/$part" || status=1
done
[ "$interrupted" = 1 ] || run_part sh bench/watch.sh "$build" || status=1
if [ "$interrupted" = 1 ]; then
	echo "bench: interrupted" >&2
	exit 130
fi

elapsed=$(($(date +%s) - start))
{
	cat "$results/header.md"
	for md in use-once.md read-path.md fork-exec.md uncached.md comeback.md watch.md trees.md; do
		[ -r "$results/$md" ] && cat "$results/$md" && echo
	done
	if [ -r "$results/use-once.gp" ] && command -v gnuplot >/dev/null 2>&1; then
		if gnuplot "$results/use-once.gp" 2>"$results/gnuplot.log"; then
			echo "![hot set and stream residency during the stream](use-once.png)"
		else
			echo "gnuplot failed: see $results/gnuplot.log" >&2
			status=1
		fi
	elif [ -r "$results/use-once.gp" ]; then
		echo "(No plot: gnuplot is not installed.)"
	fi
	echo
	echo "The whole bench took $((elapsed / 60)) min $((elapsed % 60)) s."
} >"$results/bench.md"
rm -f "$results/header.md"
echo
echo "bench: $((elapsed / 60)) min $((elapsed % 60)) s; results in $results/bench.md"
exit "$status"
