/*
 * Copying a directory keeps the hot set (issue 12), end to end.
 *
 * A memory cgroup is the machine; a hot file of a third of it is mapped
 * and touched once inside it; then a real program copies a tree of files
 * of every size (128 KiB to 40 MiB, 1.2 times the cgroup) inside it under
 * the library.  Afterwards the hot set must be resident (99%), the source
 * and the copy must not be (5% of their bytes at most: the first files of
 * a run go by before it is known to be a tree), and the copy must be
 * exact.  One case per program: cp -r, rsync -a, tar c | zstd, tar x, one
 * cp per file (find -exec cp).
 *
 * Needs root and a cgroup v1 memory controller; skips with one line
 * otherwise.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define LIMIT_MIB	128
#define HOT_KEPT_PCT	99.0
#define TREE_RES_PCT	5.0

/* The tree: what copiers meet, from below a window to past the stream threshold. */
static const struct {
	unsigned n;
	uint64_t kib;
} parts[] = {
	{ 300, 128 },		/* small files: only the tree rule can see them */
	{ 8, 2048 },
	{ 6, 10240 },		/* between a window and the threshold: nobody's today */
	{ 1, 40960 },		/* a stream on its own */
};

static const struct {
	const char *name;
	const char *script;	/* sh -c; @SRC @DST @TAR @CHK */
	const char *verify;	/* compares the copy with the tree */
	bool from_archive;
	bool to_file;
} progs[] = {
	{ "cp -r", "cp -r @SRC @DST", "diff -r @SRC @DST", false, false },
	{ "rsync -a", "rsync -a @SRC/ @DST/", "diff -r @SRC @DST", false, false },
	{ "tar c | zstd", "tar cf - -C @SRC . | zstd -q -1 -o @DST",
	  "mkdir @CHK && zstd -q -dc @DST | tar xf - -C @CHK && diff -r @SRC @CHK", false, true },
	{ "tar x", "mkdir @DST && tar xf @TAR -C @DST", "diff -r @SRC @DST", true, false },
	{ "find -exec cp", "mkdir @DST && cd @SRC && find . -type f -exec cp --parents {} @DST \\;",
	  "diff -r @SRC @DST", false, false },
};

#define NPROGS	(sizeof(progs) / sizeof(progs[0]))

static struct {
	char why[600];
	char src[512], dst[512], tar[512], chk[512], hot[512], xdg[540];
	struct uot_cgroup cg;
	uint64_t res, size;
} t;

static void expand(char *out, size_t size, const char *tpl)
{
	static const char *const tokens[] = { "@SRC", "@DST", "@TAR", "@CHK" };
	const char *values[] = { t.src, t.dst, t.tar, t.chk };

	uot_expand(out, size, tpl, tokens, values, 4);
}

static int add_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	uint64_t size = 0;
	int64_t res;

	(void)sb;
	(void)ftw;
	if (type != FTW_F)
		return 0;
	res = uot_resident(path, &size);
	t.res += res > 0 ? (uint64_t)res : 0;
	t.size += size;
	return 0;
}

static int cold_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return type == FTW_F ? uot_make_cold(path) : 0;
}

/* % of the bytes of every file under 'path' (or of that file) in the page cache. */
static double tree_pct(const char *path)
{
	t.res = t.size = 0;
	nftw(path, add_one, 16, FTW_PHYS);
	return t.size ? 100.0 * (double)t.res / (double)t.size : 0.0;
}

START_TEST(test_tree_copy_keeps_hot_set)
{
	/*
	 * The user's runtime directory holds the record through which the
	 * processes of one find share their run; root has none here.
	 */
	const char *env[] = { "USEONCE_REUSE=0", t.xdg, NULL };
	char cmd[2048];
	const char *argv[] = { "sh", "-c", cmd, NULL };
	struct uot_cmd c = { .argv = argv, .preload = true, .env = env, .cg = &t.cg,
			     .timeout_s = 120 };
	struct uot_result r;
	double hot, src, dst;

	if (t.why[0]) {
		printf("trees: skipped: %s\n", t.why);
		return;
	}
	uot_scratch_rm(t.dst);
	uot_scratch_rm(t.chk);
	ck_assert_int_eq(uot_cgroup_reset(&t.cg), 0);
	ck_assert_int_eq(nftw(t.src, cold_one, 16, FTW_PHYS), 0);
	ck_assert_int_eq(uot_make_cold(t.tar), 0);
	ck_assert_int_eq(uot_make_cold(t.hot), 0);
	ck_assert_int_eq(uot_touch(t.hot, UOT_TOUCH_MMAP, &t.cg), 0);

	expand(cmd, sizeof(cmd), progs[_i].script);
	ck_assert_msg(uot_run(&c, &r) == 0, "%s: %s", progs[_i].name, uot_why());
	ck_assert_msg(uot_exited_ok(r.status), "%s: %s", progs[_i].name,
		      uot_status_str(r.status));
	hot = uot_resident_pct(t.hot);
	src = tree_pct(progs[_i].from_archive ? t.tar : t.src);
	dst = tree_pct(t.dst);
	printf("trees: %-14s hot set %5.1f%%, source %5.1f%%, copy %5.1f%% resident after; "
	       "peak dirty+wb %.0f MiB\n", progs[_i].name, hot, src, dst,
	       uot_mib(r.peak_dirty_wb));
	expand(cmd, sizeof(cmd), progs[_i].verify);
	ck_assert_msg(uot_sh("%s", cmd) == 0, "%s: the copy differs from the tree",
		      progs[_i].name);
	ck_assert_msg(hot >= HOT_KEPT_PCT, "%s: hot set %.1f%% resident after", progs[_i].name,
		      hot);
	ck_assert_msg(src <= TREE_RES_PCT, "%s: %.1f%% of the source stayed cached",
		      progs[_i].name, src);
	ck_assert_msg(dst <= TREE_RES_PCT, "%s: %.1f%% of the copy stayed cached",
		      progs[_i].name, dst);
	uot_scratch_rm(t.dst);
	uot_scratch_rm(t.chk);
}
END_TEST

static void cleanup_at_exit(void)
{
	uot_cgroup_remove(&t.cg);
	uot_scratch_remove();
}

static void prepare(void)
{
	char path[600];
	unsigned p, i, k = 0;

	uot_sweep_stale();
	if (uot_cgroup_supported() != 0) {
		snprintf(t.why, sizeof(t.why), "%s", uot_why());
		return;
	}
	if (uot_sh("command -v rsync >/dev/null && command -v zstd >/dev/null") != 0) {
		snprintf(t.why, sizeof(t.why), "rsync or zstd is missing (tests/install-deps.sh)");
		return;
	}
	if (uot_scratch_create() != 0) {
		snprintf(t.why, sizeof(t.why), "%s", uot_why());
		return;
	}
	atexit(cleanup_at_exit);
	uot_scratch_path(t.src, sizeof(t.src), "tree");
	uot_scratch_path(t.dst, sizeof(t.dst), "copy");
	uot_scratch_path(t.tar, sizeof(t.tar), "tree.tar");
	uot_scratch_path(t.chk, sizeof(t.chk), "check");
	uot_scratch_path(t.hot, sizeof(t.hot), "hot");
	snprintf(t.xdg, sizeof(t.xdg), "XDG_RUNTIME_DIR=%s", uot_scratch());
	if (mkdir(t.src, 0755) != 0) {
		snprintf(t.why, sizeof(t.why), "mkdir %s: %s", t.src, strerror(errno));
		return;
	}
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/d%u", t.src, i);
		mkdir(path, 0755);
	}
	for (p = 0; p < sizeof(parts) / sizeof(parts[0]); p++)
		for (i = 0; i < parts[p].n; i++, k++) {
			snprintf(path, sizeof(path), "%s/d%u/f%04u", t.src, k % 3, k);
			if (uot_make_file(path, parts[p].kib << 10, k) != 0) {
				snprintf(t.why, sizeof(t.why), "cannot make the tree: %s", uot_why());
				return;
			}
		}
	if (uot_sh("tar cf '%s' -C '%s' .", t.tar, t.src) != 0 ||
	    uot_make_file(t.hot, (LIMIT_MIB / 3) * UOT_MIB, 77) != 0 ||
	    uot_cgroup_create(&t.cg, LIMIT_MIB * UOT_MIB) != 0)
		snprintf(t.why, sizeof(t.why), "cannot prepare: %s", uot_why());
}

int main(void)
{
	Suite *s = suite_create("trees");
	TCase *tc = tcase_create("copying a directory");

	prepare();
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_tree_copy_keeps_hot_set, 0, NPROGS);
	suite_add_tcase(s, tc);
	return uot_check_run(s, true);
}
