/*
 * Two guesses the guard makes, measured against the kernel alone:
 *
 * - A file that comes back: the same file streamed 4 times by cat.  The
 *   first stream is dropped; the record of recent streams (USEONCE_REUSE)
 *   leaves the second in the cache, and the others read it from there.
 *   Reported: time of each pass and in all, guarded/unguarded, and what
 *   stayed cached after each pass.
 * - A tree of small files: tar c of FILES files of 100 KiB, cold, into a
 *   pipe.  Reported: time, and how many files have pages cached after.
 *
 *	comeback [STREAM_MIB] [FILES]	(default 512 MiB, 10000 files)
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"
#include "testlib.h"

#define PASSES 4

static char run_dir[600], xdg[620];

static double stream_once(const char *file, bool with, uint64_t *after)
{
	const char *argv[] = { "cat", file, NULL };
	const char *env[] = { "USEONCE_REUSE=600", xdg, NULL };
	struct uot_cmd c = { .argv = argv, .preload = with, .env = env, .out = "/dev/null" };
	struct uot_result r;

	if (uot_run(&c, &r) != 0 || !uot_exited_ok(r.status)) {
		fprintf(stderr, "comeback: cat: %s\n", uot_why());
		exit(1);
	}
	*after = (uint64_t)uot_resident(file, NULL);
	return r.secs;
}

static void comeback(uint64_t mib)
{
	char file[600], record[640];
	double t[2][PASSES], total[2] = { 0, 0 };
	uint64_t after[2][PASSES];
	int m, i;

	uot_scratch_path(file, sizeof(file), "stream");
	snprintf(record, sizeof(record), "%s/useonce-streams", run_dir);
	if (uot_make_file(file, mib << 20, 21) != 0) {
		fprintf(stderr, "comeback: %s\n", uot_why());
		exit(1);
	}
	/*
	 * One pass before measuring: a virtual machine's disk may be cached by
	 * its host, and the first run to read it would pay for both.
	 */
	stream_once(file, false, &after[0][0]);
	for (m = 0; m < 2; m++) {
		unlink(record);
		uot_make_cold(file);
		for (i = 0; i < PASSES && !uot_interrupted; i++) {
			t[m][i] = stream_once(file, m == 1, &after[m][i]);
			total[m] += t[m][i];
		}
	}
	uob_md("\nThe same %llu MiB file streamed %d times by cat (cold at the start):\n\n",
	       (unsigned long long)mib, PASSES);
	uob_md("| pass | kernel alone s | resident after MiB | libuseonce s | resident after MiB |\n"
	       "|---|---|---|---|---|\n");
	for (i = 0; i < PASSES; i++)
		uob_md("| %d | %.2f | %.0f | %.2f | %.0f |\n", i + 1, t[0][i], uot_mib(after[0][i]),
		       t[1][i], uot_mib(after[1][i]));
	uob_md("| all | %.2f | | %.2f | |\n\nTotal time guarded/unguarded: %.2f (target <= 1.1).\n",
	       total[0], total[1], total[1] / total[0]);
	unlink(file);
	unlink(record);
}

static void tree(int files)
{
	char dir[600], path[700];
	/* Through a pipe: tar reads nothing when told to write to /dev/null, and
	 * an archive on disk would measure the guard's write throttling too. */
	const char *argv[] = { "sh", "-c", "tar cf - -C \"$0\" . | cat >/dev/null", dir, NULL };
	const char *env[] = { "USEONCE_REUSE=0", NULL };
	double secs[2];
	int cached[2], m, i;

	uot_scratch_path(dir, sizeof(dir), "tree");
	if (mkdir(dir, 0755) != 0) {
		fprintf(stderr, "comeback: mkdir %s: %s\n", dir, strerror(errno));
		exit(1);
	}
	for (i = 0; i < files && !uot_interrupted; i++) {
		snprintf(path, sizeof(path), "%s/f%05d", dir, i);
		if (uot_make_file(path, 100 << 10, (uint32_t)i) != 0) {
			fprintf(stderr, "comeback: %s\n", uot_why());
			exit(1);
		}
	}
	for (m = -1; m < 2 && !uot_interrupted; m++) {
		struct uot_cmd c = { .argv = argv, .preload = m == 1, .env = env };
		struct uot_result r;

		for (i = 0; i < files; i++) {
			snprintf(path, sizeof(path), "%s/f%05d", dir, i);
			uot_make_cold(path);
		}
		if (uot_run(&c, &r) != 0 || !uot_exited_ok(r.status)) {
			fprintf(stderr, "comeback: tar: %s\n", uot_why());
			exit(1);
		}
		if (m < 0)
			continue;	/* the warm-up pass, as above */
		secs[m] = r.secs;
		for (cached[m] = 0, i = 0; i < files; i++) {
			snprintf(path, sizeof(path), "%s/f%05d", dir, i);
			cached[m] += uot_resident(path, NULL) > 0;
		}
	}
	uob_md("\ntar c of %d files of 100 KiB (cold at the start):\n\n"
	       "| | kernel alone | libuseonce |\n|---|---|---|\n"
	       "| time s | %.2f | %.2f |\n| files with pages cached after | %d | %d |\n",
	       files, secs[0], secs[1], cached[0], cached[1]);
}

int main(int argc, char **argv)
{
	uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : uob_smoke() ? 64 : 512;
	int files = argc > 2 ? atoi(argv[2]) : uob_smoke() ? 200 : 10000;

	if (mib < 64 || files < 100) {
		fprintf(stderr, "usage: comeback [STREAM_MIB >= 64] [FILES >= 100]\n");
		return 2;
	}
	uob_init("comeback", "comeback.md");
	uob_md("## 5. Files that come back, trees of small files\n\n");
	if (uot_scratch_create() != 0) {
		fprintf(stderr, "comeback: %s\n", uot_why());
		return uob_finish(1);
	}
	atexit(uot_scratch_remove);
	uot_scratch_path(run_dir, sizeof(run_dir), "run");
	snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s", run_dir);
	if (mkdir(run_dir, 0700) != 0) {
		fprintf(stderr, "comeback: mkdir %s: %s\n", run_dir, strerror(errno));
		return 1;
	}
	comeback(mib);
	tree(files);
	return uob_finish(uot_interrupted ? 130 : 0);
}
