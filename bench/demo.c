/*
 * demo: libuseonce at work on data it makes itself.
 *
 * The use-once test (the seed of this project): a hot file is mapped and
 * touched once, then a stream several times its size is copied with cp.
 * Today's kernel lets the copy push the hot file out of the page cache;
 * under `useonce` the hot file stays and the stream's footprint stays
 * small.  The demo runs cp without and with useonce and prints both.
 *
 * As root it runs everything inside a memory cgroup (the "machine"), so the
 * pressure is real even on a machine with plenty of RAM.  Without root it
 * can only show the stream's footprint, and says so.
 *
 *	UO_BUILD		the build directory (default build)
 *	UO_DEMO_LIMIT_MIB	the cgroup's memory (default 256; stream 4x, hot file 1/3)
 *
 * Everything it makes is removed at the end, on error and on Ctrl-C.
 *
 * SPDX-License-Identifier: MIT
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

struct demo_row {
	const char *label;
	bool ran;
	double hot_before;
	double hot_after;
	struct uot_result r;
	bool copy_ok;
};

static struct uot_cgroup demo_cg;

static void demo_cleanup(void)
{
	uot_cgroup_remove(&demo_cg);
	uot_scratch_remove();
}

__attribute__((noreturn))
static void demo_fail(const char *what)
{
	if (uot_interrupted) {
		fprintf(stderr, "\ndemo: interrupted; removing what it made\n");
		demo_cleanup();
		exit(130);
	}
	fprintf(stderr, "demo: %s: %s\n", what, uot_why());
	demo_cleanup();
	exit(1);
}

/*
 * One run of cp, bare or under useonce: the hot file made cold and touched
 * once (inside the cgroup if any), then the copy, sampled as it runs.
 */
static void demo_run(struct demo_row *row, bool with, const char *hot, const char *stream,
		     const char *copy)
{
	const char *bare[] = { "cp", stream, copy, NULL };
	const char *guarded[] = { uot_useonce(), "cp", stream, copy, NULL };
	struct uot_cgroup *cg = demo_cg.path[0] ? &demo_cg : NULL;
	struct uot_cmd c;

	unlink(copy);
	if (uot_make_cold(stream) != 0)
		demo_fail("making the stream cold");
	if (cg) {
		if (uot_cgroup_reset(cg) != 0)
			demo_fail("emptying the cgroup");
		if (uot_make_cold(hot) != 0 || uot_touch(hot, UOT_TOUCH_MMAP, cg) != 0)
			demo_fail("touching the hot file");
		row->hot_before = uot_resident_pct(hot);
	}
	memset(&c, 0, sizeof(c));
	c.argv = with ? guarded : bare;
	c.cg = cg;
	c.watch[0] = stream;
	c.watch[1] = copy;
	printf("  $ %s%s\n", with ? "useonce " : "", "cp stream copy");
	fflush(stdout);
	if (uot_run(&c, &row->r) != 0)
		demo_fail("running cp");
	if (!uot_exited_ok(row->r.status)) {
		fprintf(stderr, "demo: cp %s\n", uot_status_str(row->r.status));
		demo_cleanup();
		exit(1);
	}
	if (cg)
		row->hot_after = uot_resident_pct(hot);
	row->copy_ok = uot_files_equal(stream, 0, copy, 0, UINT64_MAX) == 1;
	if (uot_interrupted)
		demo_fail("comparing");
	row->ran = true;
	unlink(copy);
}

static void demo_table(const struct demo_row *rows, int n, bool cgroup)
{
	int i;

	printf("\n");
	if (cgroup) {
		printf("  %-12s %9s %9s   %12s %10s   %12s  %6s  %s\n", "", "hot set", "hot set",
		       "stream peak", "copy peak", "dirty+wb", "time", "copy");
		printf("  %-12s %9s %9s   %12s %10s   %12s  %6s  %s\n", "run", "before", "after",
		       "MiB", "MiB", "peak MiB", "s", "identical");
	} else {
		printf("  %-12s %12s %12s %10s %10s  %6s  %s\n", "", "stream peak",
		       "stream after", "copy peak", "copy after", "time", "copy");
		printf("  %-12s %12s %12s %10s %10s  %6s  %s\n", "run", "MiB", "MiB", "MiB",
		       "MiB", "s", "identical");
	}
	for (i = 0; i < n; i++) {
		const struct demo_row *w = &rows[i];

		if (cgroup)
			printf("  %-12s %8.1f%% %8.1f%%   %12.0f %10.0f   %12.0f  %6.1f  %s\n",
			       w->label, w->hot_before, w->hot_after, uot_mib(w->r.peak[0]),
			       uot_mib(w->r.peak[1]), uot_mib(w->r.peak_dirty_wb), w->r.secs,
			       w->copy_ok ? "yes" : "NO");
		else
			printf("  %-12s %12.0f %12.0f %10.0f %10.0f  %6.1f  %s\n", w->label,
			       uot_mib(w->r.peak[0]), uot_mib(w->r.after[0]),
			       uot_mib(w->r.peak[1]), uot_mib(w->r.after[1]), w->r.secs,
			       w->copy_ok ? "yes" : "NO");
	}
	printf("\n");
}

int main(void)
{
	uint64_t limit = uot_env_mib("demo", "UO_DEMO_LIMIT_MIB", 256, 64) * UOT_MIB;
	uint64_t stream_size = 4 * limit, hot_size = limit / 3;
	struct demo_row rows[2] = { { .label = "cp" }, { .label = "useonce cp" } };
	char hot[PATH_MAX], stream[PATH_MAX], copy[PATH_MAX];
	bool cgroup;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	uot_catch_signals();
	uot_sweep_stale();
	if (access(uot_useonce(), X_OK) != 0 || access(uot_library(), R_OK) != 0) {
		fprintf(stderr, "demo: %s or %s is missing: run make first\n", uot_useonce(),
			uot_library());
		return 1;
	}
	if (uot_scratch_create() != 0)
		demo_fail("no place for the demo's files");
	uot_scratch_path(hot, sizeof(hot), "hot");
	uot_scratch_path(stream, sizeof(stream), "stream");
	uot_scratch_path(copy, sizeof(copy), "copy");

	cgroup = uot_cgroup_supported() == 0;
	printf("useonce demo: one big copy must not push everyone else's data out of the page cache.\n");
	if (cgroup) {
		if (uot_cgroup_create(&demo_cg, limit) != 0)
			demo_fail("making a memory cgroup");
		printf("The machine: a memory cgroup of %.0f MiB (%s).\n"
		       "A hot file of %.0f MiB is mapped and touched once inside it, then cp copies a\n"
		       "%.0f MiB stream inside it; first bare, then under useonce.\n\n",
		       uot_mib(limit), demo_cg.path, uot_mib(hot_size), uot_mib(stream_size));
	} else {
		printf("Cannot show the hot set here (%s): without a memory cgroup\n"
		       "this machine's RAM holds everything, so nothing would be pushed out.\n"
		       "Showing how much of a %.0f MiB copy stays in the page cache instead.\n\n",
		       uot_why(), uot_mib(stream_size));
	}

	printf("  making the files in %s ...\n", uot_scratch());
	if ((cgroup && uot_make_file(hot, hot_size, 11) != 0) ||
	    uot_make_file(stream, stream_size, 12) != 0)
		demo_fail("making the files");

	for (i = 0; i < 2; i++)
		demo_run(&rows[i], i == 1, hot, stream, copy);
	demo_table(rows, 2, cgroup);

	if (cgroup)
		printf("Without useonce the hot set fell to %.1f%%; with it, it stayed at %.1f%%,\n"
		       "while cp held at most %.0f MiB of the stream and %.0f MiB of its copy in the\n"
		       "page cache at any time (bare: %.0f and %.0f MiB, all the cgroup allowed).\n",
		       rows[0].hot_after, rows[1].hot_after,
		       uot_mib(rows[1].r.peak[0]), uot_mib(rows[1].r.peak[1]),
		       uot_mib(rows[0].r.peak[0]), uot_mib(rows[0].r.peak[1]));
	else
		printf("Without useonce the page cache kept %.0f MiB of the stream and %.0f MiB of\n"
		       "the copy after cp exited; with it, %.0f and %.0f MiB.\n",
		       uot_mib(rows[0].r.after[0]), uot_mib(rows[0].r.after[1]),
		       uot_mib(rows[1].r.after[0]), uot_mib(rows[1].r.after[1]));
	demo_cleanup();
	return rows[0].copy_ok && rows[1].copy_ok ? 0 : 1;
}
