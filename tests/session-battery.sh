#!/bin/sh
# session-battery.sh WORK SRCDIR GEN: a day of everyday programs, in miniature.
#
# Shell pipelines and redirections, a C compile, Python, tar/gzip/zstd,
# rsync, a sort that spills to temporary files, sqlite, find/xargs, git and
# a configure-like script run in WORK (which must not exist yet), on input
# made by GEN (the session_gen helper) from fixed seeds.  check_session runs
# it with and without libuseonce and compares everything it leaves behind;
# copies a step has already checked with cmp are removed, since the disk
# holds two runs at once (about 600 MiB each).
#
# Each step runs in a subshell with `set -e`; its stdout and stderr go to
# log/STEP.out and log/STEP.err and "STEP STATUS" is appended to
# log/status.  Nothing written depends on the time, the process ids or where
# WORK is, so two runs must leave the same bytes.  If BATTERY_TRACE_DIR is
# set, each step runs with USEONCE_TRACE=BATTERY_TRACE_DIR/STEP.trace.
# How long each step took goes to stderr.
# BATTERY_LINES (default 3600000, ~100 MiB) sizes the file that is sorted.
set -u

work=$1
srcdir=$(cd "$2" && pwd)
gen=$3
lines=${BATTERY_LINES:-3600000}

mkdir "$work" || exit 1
cd "$work" || exit 1
work=$(pwd)
mkdir log tmp home in

# The same environment for both runs, whatever the caller's.
export LC_ALL=C TZ=UTC HOME="$work/home" TMPDIR="$work/tmp"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=Battery GIT_AUTHOR_EMAIL=battery@example.org
export GIT_COMMITTER_NAME=Battery GIT_COMMITTER_EMAIL=battery@example.org
export GIT_AUTHOR_DATE='2024-01-01T00:00:00Z' GIT_COMMITTER_DATE='2024-01-01T00:00:00Z'
export PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 SOURCE_DATE_EPOCH=1704067200
unset CDPATH GREP_OPTIONS
umask 022
# Distribution Python, not a user's shim (pyenv and the like are shell scripts).
python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3

step() {
	name=$1
	shift
	start=$(date +%s.%N)
	(
		set -e
		if [ -n "${BATTERY_TRACE_DIR:-}" ]; then
			USEONCE_TRACE="$BATTERY_TRACE_DIR/$name.trace"
			export USEONCE_TRACE
		fi
		"$@"
	) >"log/$name.out" 2>"log/$name.err" </dev/null
	echo "$name $?" >>log/status
	# Timings go to our stderr, which is not compared.
	echo "$name $start $(date +%s.%N)" | awk '{ printf "battery: %s %.1f s\n", $1, $3 - $2 }' >&2
}

# ---- the steps ----

make_input() {
	"$gen" lines 1 "$lines" >in/lines.txt
	"$gen" bytes 2 48M >in/blob.bin
	"$gen" tree 3 in/tree 240
	wc -c in/lines.txt in/blob.bin
	find in/tree -type f | wc -l
}

shell_things() {
	cat >notes.txt <<-EOF
		first line
		home is \$HOME, not expanded
		sum: $((6 * 7))
	EOF
	{ echo appended; printf '%s\n' one two three; } >>notes.txt
	(cd in/tree && ls -R | wc -l)
	exec 4>fd4.txt
	echo "through descriptor 4" >&4
	exec 4>&-
	while read -r a b; do
		echo "$b|$a"
	done <notes.txt >swapped.txt
	count=0
	for f in in/tree/d0*/f*.txt; do
		count=$((count + 1))
	done
	echo "$count text files in d0*"
	head -c 20M in/lines.txt >head.txt
	tr 'a-z' 'A-Z' <head.txt | grep -c 'ZULU' || true
	cut -d' ' -f1 head.txt | sort | uniq -c
	rm head.txt
	head -c 5000000 in/blob.bin | od -An -tx1 | tail -n 2
	echo "lines: $(wc -l <in/lines.txt)"
	# Whole-file copies the usual ways: copy_file_range, read/write, stdio.
	cat in/blob.bin >blob.cat
	cp in/blob.bin blob.cp
	dd if=in/blob.bin of=blob.dd bs=64k status=none
	dd if=in/blob.bin bs=1M status=none | cat >blob.pipe
	cmp blob.cat in/blob.bin
	cmp blob.pipe in/blob.bin
	sha256sum in/blob.bin blob.cat blob.cp blob.dd blob.pipe
	# Checked above: keeping them would only fill the disk.
	rm blob.cat blob.cp blob.dd blob.pipe
	echo "exit of false in a subshell: $( (false) && echo 0 || echo $?)"
}

c_program() {
	mkdir cprog
	cat >cprog/sum.c <<-'EOF'
		#include <fcntl.h>
		#include <stdio.h>
		#include <stdint.h>
		#include <unistd.h>
		#include "sum.h"

		int main(int argc, char **argv)
		{
			static unsigned char buf[1 << 20];
			uint64_t h = SUM_SEED, total = 0;
			ssize_t n;
			FILE *out;
			int fd;

			if (argc != 3)
				return 2;
			fd = open(argv[1], O_RDONLY);
			out = fopen(argv[2], "w");
			if (fd < 0 || !out)
				return 1;
			while ((n = read(fd, buf, sizeof(buf))) > 0) {
				for (ssize_t i = 0; i < n; i++) {
					h = (h ^ buf[i]) * 0x100000001b3ULL;
					buf[i] ^= 0x5a;
				}
				if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
					return 1;
				total += (uint64_t)n;
			}
			if (n < 0 || fclose(out) != 0 || close(fd) != 0)
				return 1;
			printf("%llu bytes, fnv %016llx\n", (unsigned long long)total,
			       (unsigned long long)h);
			return 0;
		}
	EOF
	echo '#define SUM_SEED 0xcbf29ce484222325ULL' >cprog/sum.h
	(cd cprog && cc -O2 -Wall -c sum.c && cc -o sum sum.o)
	cprog/sum in/blob.bin blob.x
	cprog/sum blob.x blob.xx
	cmp blob.xx in/blob.bin
	rm blob.xx
	cprog/sum /nonexistent out || echo "missing input: status $?"
}

python_things() {
	cat >script.py <<-'EOF'
		import collections, hashlib, os, shutil, subprocess, sys
		words = collections.Counter()
		with open("in/lines.txt") as f:
		    for i, line in enumerate(f):
		        if i == 200000:
		            break
		        words.update(line.split()[:2])
		with open("words.txt", "w") as out:
		    for w, n in sorted(words.items()):
		        out.write(f"{w} {n}\n")
		shutil.copyfile("in/blob.bin", "blob.py")
		h = hashlib.sha256()
		with open("blob.py", "rb") as f:
		    while chunk := f.read(1 << 16):
		        h.update(chunk)
		print("copy", h.hexdigest())
		with open("in/blob.bin", "rb") as f, open("blob.rev", "wb") as out:
		    blocks = []
		    while block := f.read(1 << 20):
		        blocks.append(block)
		    for block in reversed(blocks):
		        out.write(block)
		manifest = []
		for root, dirs, files in os.walk("in/tree"):
		    dirs.sort()
		    for name in sorted(files):
		        path = os.path.join(root, name)
		        with open(path, "rb") as f:
		            manifest.append(f"{hashlib.md5(f.read()).hexdigest()} {path}")
		with open("manifest.txt", "w") as out:
		    out.write("\n".join(manifest) + "\n")
		p = subprocess.run(["sha256sum", "blob.rev"], capture_output=True, text=True, check=True)
		print("reversed", p.stdout.split()[0])
		p = subprocess.run(["gzip", "-n", "-c"], input=open("words.txt", "rb").read(),
		                   capture_output=True, check=True)
		print("gzip of words", hashlib.sha256(p.stdout).hexdigest())
		r = subprocess.run([sys.executable, "-c", "import sys; sys.exit(3)"])
		print("child status", r.returncode)
		try:
		    open("no/such/file")
		except OSError as e:
		    print("error", e.errno)
	EOF
	"$python" script.py
	rm blob.rev blob.py
}

archives() {
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
		-cf tree.tar -C in tree
	gzip -1 -n -k tree.tar
	zstd -q -T1 -k tree.tar -o tree.tar.zst
	zstd -q -d tree.tar.zst -o tree2.tar
	cmp tree.tar tree2.tar
	rm tree2.tar
	gzip -dc tree.tar.gz | tar -tvf - | wc -l
	mkdir untar
	tar -xzf tree.tar.gz -C untar
	zstd -dc tree.tar.zst | tar -xf - -C untar --transform 's,^tree,tree-zst,'
	diff -r in/tree untar/tree
	diff -r in/tree untar/tree-zst
	rm -r untar
	zstd -q -T1 -1 in/lines.txt -o lines.zst
	zstd -q -T1 -3 in/blob.bin -o blob.zst
	zstd -q -d -c blob.zst | cmp - in/blob.bin
	rm blob.zst
	zstd -q -d -c lines.zst | cmp - in/lines.txt
	gzip -t tree.tar.gz
	ls -l tree.tar | cut -d' ' -f5
}

rsync_tree() {
	rsync -a in/tree/ mirror/
	diff -r in/tree mirror
	printf 'changed\n' >>mirror/d03/f0003.txt
	rm mirror/d05/f0005.txt
	mkdir mirror/extra
	echo stray >mirror/extra/x
	rsync -a -c --delete -i in/tree/ mirror/ | sort
	diff -r in/tree mirror
	rsync -a in/blob.bin blob.rsync
	cmp blob.rsync in/blob.bin
	# A delta transfer over a changed copy: rsync's own algorithm, through a pipe.
	printf 'X' | dd of=blob.rsync bs=1 seek=20000000 conv=notrunc status=none
	rsync -c --no-whole-file --inplace -i in/blob.bin blob.rsync
	cmp blob.rsync in/blob.bin
	rm blob.rsync
}

sort_big() {
	sort -S 16M -T tmp in/lines.txt -o sorted.txt
	sort -c sorted.txt
	cut -d' ' -f4 sorted.txt | sort -S 16M -T tmp -u | wc -l
	cut -d' ' -f1,2 sorted.txt | uniq -c | sort -k1,1nr -k2 | head -n 5
	ls tmp | wc -l
}

sqlite_db() {
	sqlite3 db.sqlite <<-'EOF'
		CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL, pad TEXT);
		BEGIN;
		WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
		INSERT INTO t SELECT x, printf('n%08x', (x * 2654435761) % 4294967296),
			x * 1.5, printf('%.*c', 40 + x % 60, 'p') FROM c;
		COMMIT;
		CREATE INDEX t_name ON t(name);
		SELECT count(*), sum(v), min(name), max(name) FROM t;
		DELETE FROM t WHERE id % 3 = 0;
		VACUUM;
		PRAGMA integrity_check;
		SELECT count(*), sum(length(pad)) FROM t WHERE name > 'n8';
	EOF
	sqlite3 db.sqlite '.backup db.backup'
	sqlite3 db.backup 'SELECT count(*) FROM t;'
	sqlite3 db.sqlite .dump | sha256sum
	sqlite3 db.sqlite 'SELECT * FROM no_such_table;' || echo "sqlite error: status $?"
}

find_xargs() {
	find in/tree -type f | sort | xargs sha256sum >sums.txt
	sha256sum -c --quiet sums.txt
	find in/tree -type f -print0 | sort -z | xargs -0 -n 16 -P 2 cat | wc -c
	find in/tree -name '*.bin' -size +64k | sort | xargs -I{} sh -c 'wc -c <"$1"' sh {}
	find in/tree -type d | sort
	find in/tree -type f -name 'f00*' -exec md5sum {} + | sort
	find . -name 'nothing-here*' | xargs -r echo found
}

git_repo() {
	git init -q -b main repo
	git -C repo config pack.threads 1
	git -C repo config gc.auto 0
	git -C repo config pack.window 4
	git -C repo config core.compression 1
	mkdir repo/tree
	cp -R in/tree/d0* repo/tree/
	head -c 12M in/blob.bin >repo/blob.bin
	git -C repo add -A
	git -C repo commit -q -m "first commit"
	sed -i 's/alpha/ALPHA/' repo/tree/d01/f0001.txt
	echo "new file" >repo/NEW
	git -C repo rm -q tree/d02/f0002.txt
	git -C repo add -A
	git -C repo commit -q -m "second commit"
	git -C repo log --stat --format='%H %s'
	git -C repo diff HEAD~1 --stat
	git -C repo diff HEAD~1 -- tree/d01/f0001.txt | head -n 20
	git -C repo gc -q
	git -C repo count-objects -v | grep -v '^size'
	git clone -q --no-local repo clone
	git -C clone log --oneline
	git -C clone fsck --full --no-progress
	git -C repo archive --format=tar --prefix=snap/ HEAD >snap.tar
	git -C repo archive --format=zip --prefix=snap/ HEAD tree/d01 >snap.zip
	tar -tf snap.tar | wc -l
	git -C repo cat-file -p HEAD:tree/d01/f0001.txt | head -n 2
	git -C repo show --stat HEAD~1 | tail -n 2
	git -C repo status --short
}

configure_like() {
	mkdir conf
	(cd conf && CC=cc sh "$srcdir/bench/configure-like.sh" 3)
	ls -A conf
}

step input make_input
step shell shell_things
step cc c_program
step python python_things
step archives archives
step rsync rsync_tree
step sort sort_big
step sqlite sqlite_db
step find find_xargs
step git git_repo
step configure configure_like
cat log/status
