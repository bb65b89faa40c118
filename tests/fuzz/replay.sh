#!/bin/sh
# Replays the kept fuzzing corpus through the fuzz target built with
# AddressSanitizer and UndefinedBehaviorSanitizer: seconds, and any input
# that once crashed a parser must not crash it again.  Skips (one line) if
# clang or its libFuzzer runtime is missing.
#   tests/fuzz/replay.sh BUILD_DIR [CLANG]
set -u

build=$1
cc=${2:-clang}
here=$(dirname "$0")
bin=$build/fuzz/fuzz_config

if ! command -v "$cc" >/dev/null 2>&1; then
	echo "fuzz: replay skipped: $cc is missing (tests/install-deps.sh installs clang)"
	exit 0
fi
if ! make --no-print-directory -s B="$build" FUZZ_CC="$cc" "$bin" >"$build/fuzz-build.log" 2>&1; then
	if grep -q -i "fuzzer" "$build/fuzz-build.log"; then
		echo "fuzz: replay skipped: $cc cannot link libFuzzer (Debian: libclang-rt-14-dev)"
		exit 0
	fi
	cat "$build/fuzz-build.log"
	echo "fuzz: cannot build $bin"
	exit 1
fi
n=$(ls "$here/corpus" | wc -l)
if ! "$bin" -runs=0 "$here"/corpus/* >"$build/fuzz-replay.log" 2>&1; then
	tail -n 40 "$build/fuzz-replay.log"
	echo "fuzz: replay of $n inputs FAILED (see $build/fuzz-replay.log)"
	exit 1
fi
echo "fuzz: replayed $n corpus inputs through the parsers under ASan+UBSan: no failure"
