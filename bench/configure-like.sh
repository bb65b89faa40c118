#!/bin/sh
# configure-like.sh [ITERATIONS]: the forky workload of the fork/exec
# benchmark.  What a configure script does, in miniature: many short-lived
# processes (the preprocessor and compiler on tiny programs, sed, grep,
# expr, tr, sort...), each of which pays once for whatever is preloaded.
# It writes only in the current directory, and says nothing on stdout
# unless something is wrong.
set -eu

iterations=${1:-1}
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || CC=""
exec 3>config.log

# Real configure scripts run the compiler on a few lines for each check.
check_header() {
	printf 'checking for %s... ' "$1" >&3
	printf '#include <%s>\nint main(void) { return 0; }\n' "$1" >conftest.c
	if [ -n "$CC" ] && $CC -E conftest.c >conftest.i 2>>config.log; then
		echo yes >&3
		name=$(echo "HAVE_$1" | tr 'a-z./' 'A-Z__')
		echo "#define $name 1" >>confdefs.h
	else
		echo no >&3
	fi
	rm -f conftest.c conftest.i
}

check_func() {
	printf 'checking for %s... ' "$1" >&3
	cat >conftest.c <<EOF
char $1(void);
int main(void) { return (int)(long)&$1; }
EOF
	if [ -n "$CC" ] && $CC -o conftest conftest.c 2>>config.log; then
		echo yes >&3
		echo "#define HAVE_$(echo "$1" | tr 'a-z' 'A-Z') 1" >>confdefs.h
	else
		echo no >&3
	fi
	rm -f conftest conftest.c
}

i=0
while [ "$i" -lt "$iterations" ]; do
	: >confdefs.h
	for h in stdio.h stdlib.h string.h unistd.h fcntl.h sys/stat.h; do
		check_header "$h"
	done
	for f in posix_fadvise sync_file_range copy_file_range; do
		check_func "$f"
	done
	# The text processing around the checks: substitutions, sorting, counting.
	n=0
	for word in alpha beta gamma delta epsilon zeta eta theta iota kappa; do
		n=$(expr "$n" + 1)
		up=$(echo "$word" | tr 'a-z' 'A-Z')
		echo "@$up@ $word $n" >>subst.tmp
		base=$(basename "/usr/lib/$word.so" .so)
		dir=$(dirname "/usr/lib/$word/$base")
		[ "$dir" = "/usr/lib/$word" ] || echo "dirname: $dir" >&2
	done
	sort -r subst.tmp | uniq >subst.sorted
	sed -e 's/^@\([A-Z]*\)@ \([a-z]*\) \([0-9]*\)$/s|@\1@|\2-\3|g/' subst.sorted >subst.sed
	printf 'CFLAGS = @ALPHA@ @BETA@\nLIBS = @GAMMA@ @DELTA@\nall: @EPSILON@\n' >Makefile.in
	sed -f subst.sed Makefile.in >Makefile
	grep -q 'alpha-1' Makefile || echo "configure-like: substitution failed" >&2
	lines=$(wc -l <confdefs.h)
	cut -d' ' -f2 confdefs.h | sort | uniq -c >/dev/null
	echo "iteration $i: $lines definitions" | cat >>config.log
	rm -f subst.tmp subst.sorted subst.sed Makefile.in Makefile
	i=$(expr "$i" + 1)
done
rm -f confdefs.h
exec 3>&-
rm -f config.log
