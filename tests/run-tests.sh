#!/bin/sh
# Runs every Check program given, and ends with one line that adds them up:
#   check: N passed, N failed
# Exit status is 0 only if every program ran and none failed.
set -u

build=$1
shift
export UO_BUILD="$build"
# Tests stream the same files again and again: the record of recent streams
# would keep them cached.  check_reuse turns it on where it is under test.
export USEONCE_REUSE=0
passed=0
failed=0
broken=""
for prog in "$@"; do
	name=$(basename "$prog")
	out=$(mktemp)
	"$prog" 2>&1 | tee "$out"
	status=$?
	summary=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$out" | tail -n 1)
	rm -f "$out"
	if [ -z "$summary" ]; then
		broken="$broken $name"
		failed=$((failed + 1))
		continue
	fi
	checks=$(echo "$summary" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
	fails=$(echo "$summary" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
	errors=$(echo "$summary" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
	passed=$((passed + checks - fails - errors))
	failed=$((failed + fails + errors))
done
[ -n "$broken" ] && echo "check: no summary from:$broken (crashed?)"
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
