/*
 * A tree of many small files streamed by one process (tar c, sha256sum of
 * a whole directory): no file is big enough to be a stream, together they
 * flood the cache.  Under the library, once the process has read enough
 * files whole, each further one is dropped when closed, unless someone
 * had it cached when it was opened.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"
#include "policy.h"

#define FILES		400
#define FILE_KIB	128
#define HOT_FIRST	200	/* files HOT_FIRST.. HOT_FIRST + HOT - 1 are cached before */
#define HOT		50
/* Files read before the process is known to stream a tree stay, and a few more. */
#define EARLY_MAX	(UO_TREE_FILES + 8)

static struct {
	char dir[512];
	char archive[512];
} t;

static void file_path(char *out, size_t size, int i)
{
	snprintf(out, size, "%s/f%03d", t.dir, i);
}

/* How many of the files have pages cached; whether all the hot ones are whole. */
static int files_cached(bool *hot_whole)
{
	char path[600];
	int i, n = 0;

	*hot_whole = true;
	for (i = 0; i < FILES; i++) {
		double pct;

		file_path(path, sizeof(path), i);
		pct = uot_resident_pct(path);
		n += pct > 0;
		/*
		 * The guard drops a file whole; a page or two may go to the
		 * machine's own reclaim (this VM pages out idle memory).
		 */
		if (i >= HOT_FIRST && i < HOT_FIRST + HOT && pct < 90.0)
			*hot_whole = false;
	}
	return n;
}

static void prepare_state(void)
{
	char path[600];
	int i;

	for (i = 0; i < FILES; i++) {
		file_path(path, sizeof(path), i);
		ck_assert_int_eq(uot_make_cold(path), 0);
	}
	for (i = HOT_FIRST; i < HOT_FIRST + HOT; i++) {
		file_path(path, sizeof(path), i);
		ck_assert_int_eq(uot_touch(path, UOT_TOUCH_READ, NULL), 0);
	}
}

/* _i: 0 tar c into an archive, 1 sha256sum of every file (stdio); with, then without. */
START_TEST(test_tree_stream)
{
	const char *tar[] = { "tar", "cf", t.archive, "-C", t.dir, ".", NULL };
	const char *sum[] = { "sh", "-c", "cd \"$0\" && sha256sum f*", t.dir, NULL };
	const char *name = _i ? "sha256sum" : "tar";
	int cached[2], m;
	bool hot_whole[2];

	if (uot_skipped(NULL)) {
		return;
	}
	for (m = 0; m < 2; m++) {
		struct uot_cmd c = { .argv = _i ? sum : tar, .preload = m == 0, .out = "/dev/null" };
		struct uot_result r;

		prepare_state();
		ck_assert_msg(uot_run(&c, &r) == 0, "%s: %s", name, uot_why());
		ck_assert_msg(uot_exited_ok(r.status), "%s: %s", name, uot_status_str(r.status));
		cached[m] = files_cached(&hot_whole[m]);
		unlink(t.archive);
	}
	printf("tree: %-9s %d files of %d KiB, %d cached before: with the library %d have pages "
	       "after, without %d\n", name, FILES, FILE_KIB, HOT, cached[0], cached[1]);
	ck_assert_msg(hot_whole[0], "%s under the library dropped files that were cached", name);
	ck_assert_msg(cached[0] <= HOT + EARLY_MAX, "%s under the library left %d files cached",
		      name, cached[0]);
	ck_assert_msg(cached[1] >= FILES * 9 / 10, "without the library only %d files stayed: "
		      "this test cannot see a difference", cached[1]);
}
END_TEST

static void prepare(void)
{
	char path[600];
	int i;

	uot_suite_begin("tree", NULL);
	if (!uot_need_scratch())
		return;
	uot_scratch_path(t.dir, sizeof(t.dir), "tree");
	uot_scratch_path(t.archive, sizeof(t.archive), "tree.tar");
	if (mkdir(t.dir, 0755) != 0) {
		uot_skip("mkdir %s: %s", t.dir, strerror(errno));
		return;
	}
	for (i = 0; i < FILES; i++) {
		file_path(path, sizeof(path), i);
		if (uot_make_file(path, (uint64_t)FILE_KIB << 10, (uint32_t)i) != 0) {
			uot_skip("cannot make the tree: %s", uot_why());
			return;
		}
	}
}

int main(void)
{
	Suite *s = suite_create("tree");
	TCase *tc = tcase_create("many small files");

	prepare();
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_tree_stream, 0, 2);
	suite_add_tcase(s, tc);
	return uot_check_run(s, true);
}
