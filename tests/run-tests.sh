#!/bin/sh
# Runs every Check program given, and ends with one line that adds them up:
#   check: N passed, N failed
# Exit status is 0 only if every program ran and none failed.
#
# An argument NAME=VALUE sets NAME in the environment of the programs after
# it (an empty VALUE unsets it): the sanitizer pass runs a second set of
# programs with UO_BUILD and the sanitizers' options of its own.
#
# A program also fails if it exits with a failure status its summary does not
# explain, or if its output holds a sanitizer's report: reports from programs
# run under the preloaded library (cp, python3) reach only our output.
set -u

build=$1
shift
export UO_BUILD="$build"
# Tests stream the same files again and again: the record of recent streams
# would keep them cached.  check_reuse turns it on where it is under test.
export USEONCE_REUSE=0
# Without XDG_RUNTIME_DIR the library keeps its record (and its notes of
# warnings said) in a private directory under TMPDIR: the tests' own, gone
# at the end, so nothing of theirs stays in /tmp.
TMPDIR=$(cd "$build" && pwd)/tmp.$$
export TMPDIR
mkdir -p "$TMPDIR"
# Programs some suites run with a clean environment (no TMPDIR) still make
# /tmp/useonce-UID: removed too, unless it was there before the run.
priv=/tmp/useonce-$(id -u)
priv_was=0
[ -e "$priv" ] && priv_was=1
trap 'rm -rf "$TMPDIR"; [ "$priv_was" = 1 ] || rm -rf "$priv"' EXIT
# dash runs no EXIT trap when a signal ends it: Ctrl-C would leave TMPDIR
# behind.  Exit instead, through the trap above.
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
passed=0
failed=0
broken=""
reported=""
# Check's lines for failed and errored tests (file:line:F|E:case:test:...),
# said again just before the closing line: CI shows only a run's tail.
failures=""
# Each program's wall time, said at the end: the suite must stay well
# under its time limit, and this says where the time goes.
times=""
sanitizer='^==[0-9]+==ERROR: (Address|Leak)Sanitizer|^WARNING: ThreadSanitizer|^SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer)|: runtime error: '
for arg in "$@"; do
	case $arg in
	*=*)
		var=${arg%%=*}
		val=${arg#*=}
		if [ -n "$val" ]; then
			export "$var=$val"
		else
			unset "$var"
		fi
		continue
		;;
	esac
	prog=$arg
	name=$(basename "$(dirname "$(dirname "$prog")")")/$(basename "$prog")
	out=$(mktemp)
	rcfile=$(mktemp)
	start=$(date +%s)
	{ "$prog" 2>&1; echo $? >"$rcfile"; } | tee "$out"
	times="$times
  $name $(($(date +%s) - start)) s"
	status=$(cat "$rcfile")
	summary=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$out" | tail -n 1)
	san=$(grep -cE "$sanitizer" "$out")
	bad=$(grep -E '^[^:]+:[0-9]+:[FE]:' "$out" | head -n 20 | sed "s|^|  $name: |")
	[ -n "$bad" ] && failures="$failures
$bad"
	rm -f "$out" "$rcfile"
	if [ "$san" -gt 0 ]; then
		reported="$reported $name"
		failed=$((failed + 1))
	fi
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
	if [ "$status" -ne 0 ] && [ $((fails + errors)) -eq 0 ]; then
		broken="$broken $name(exit $status)"
		failed=$((failed + 1))
	fi
done
printf 'check: time per program:%s\n' "$times"
[ -n "$failures" ] && printf 'check: failed tests:%s\n' "$failures"
[ -n "$reported" ] && echo "check: sanitizer reports from:$reported"
[ -n "$broken" ] && echo "check: no summary or a failure status from:$broken (crashed?)"
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
