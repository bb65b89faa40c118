#!/bin/sh
# Installs what `make bench` needs, on Debian and its derivatives, if it is
# missing: gnuplot for the plot, Debian's nocache to compare against,
# valgrind to count instructions, and the streamers' programs.  Run as
# root (CI is); otherwise it says what to install.  It never fails the
# bench: whatever is still missing is left out of the results, which say so.
set -u

missing=""
command -v gnuplot >/dev/null 2>&1 || missing="$missing gnuplot-nox"
[ -r /usr/lib/nocache/nocache.so ] || missing="$missing nocache"
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
[ -x /usr/bin/python3 ] || missing="$missing python3"
command -v tar >/dev/null 2>&1 || missing="$missing tar"
command -v sha256sum >/dev/null 2>&1 || missing="$missing coreutils"
command -v restic >/dev/null 2>&1 || missing="$missing restic"
command -v bc >/dev/null 2>&1 || missing="$missing bc"
# Part 6 (trees) copies with these.
command -v rsync >/dev/null 2>&1 || missing="$missing rsync"
command -v zstd >/dev/null 2>&1 || missing="$missing zstd"
command -v find >/dev/null 2>&1 || missing="$missing findutils"
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "bench/install-deps: missing:$missing (as root: apt-get install$missing);" \
		"the bench runs without them" >&2
	exit 0
fi
echo "bench/install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing; } \
	>/dev/null; then
	echo "bench/install-deps: could not install$missing; the bench runs without them" >&2
fi
exit 0
