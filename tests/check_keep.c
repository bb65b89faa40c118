/*
 * What someone else uses stays cached: the first complaint about every
 * cache dropper.  Each case warms part of a file the way a user of it
 * would, runs a streaming program under the library, and measures with
 * mincore what is still cached:
 *
 *   sparse hot set	1024 hot 4 KiB pages spread over 16 MiB of a 60 MiB
 *			file (a live database being backed up) survive a dd
 *   hot head		the first 8 MiB of a file, cached before, survive a dd
 *   mixed reads	a stream drops only what it read: 7 MiB at the cursor,
 *			then pread from 40 MiB, leaves [8, 40) MiB alone
 *   tree re-read	48 files of 128 KiB read three times (a training data
 *			loader): a file streamed again within USEONCE_REUSE
 *			is kept
 *   written, read	a file written then read back soon is kept: write
 *			streams are noted in the record
 *   followed		a file another, unguarded program appends to, read
 *			as it grows by tail -f under the library: the
 *			writer's pages stay (the windows probed ahead of the
 *			follower lie past the end of the file: nothing was
 *			there yet, not "nothing cached")
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define PAGE	4096ULL

static struct {
	char file[512];
	char run[512];
	char xdg[600];
} k;

/* Of the 4 KiB pages at off, off + stride, ... (n of them), how many are cached? */
static unsigned pages_cached(const char *path, uint64_t off, uint64_t stride, unsigned n)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	unsigned char *vec;
	unsigned i, got = 0;
	void *map;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	vec = malloc((size_t)st.st_size / PAGE + 1);
	ck_assert_ptr_nonnull(vec);
	ck_assert_int_eq(mincore(map, (size_t)st.st_size, vec), 0);
	for (i = 0; i < n; i++)
		got += vec[(off + i * stride) / PAGE] & 1;
	free(vec);
	munmap(map, (size_t)st.st_size);
	close(fd);
	return got;
}

/* Reads n pages of 4 KiB at off, off + stride...: no readahead around them. */
static void warm_pages(const char *path, uint64_t off, uint64_t stride, unsigned n)
{
	char buf[PAGE];
	int fd = open(path, O_RDONLY);
	unsigned i;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(pread(fd, buf, sizeof(buf), (off_t)(off + i * stride)),
				 (ssize_t)sizeof(buf));
	close(fd);
}

static void run(const char *const *argv, const char *const *env)
{
	struct uot_cmd c = { .argv = argv, .preload = true, .env = env, .out = "/dev/null" };
	struct uot_result res;

	ck_assert_msg(uot_run(&c, &res) == 0, "%s: %s", argv[0], uot_why());
	ck_assert_msg(uot_exited_ok(res.status), "%s: %s", argv[0], uot_status_str(res.status));
}

static void dd_whole(const char *path)
{
	char in[600];
	const char *argv[] = { "dd", in, "of=/dev/null", "bs=1M", "status=none", NULL };

	uot_sfmt(in, sizeof(in), "if=%s", path);
	run(argv, NULL);
}

START_TEST(test_sparse_hot_set_kept)
{
	const uint64_t hot = 24 * UOT_MIB, stride = 16 * 1024;
	unsigned before, after;

	if (uot_skipped(NULL))
		return;
	ck_assert_int_eq(uot_make_file(k.file, 60 * UOT_MIB, 7), 0);
	warm_pages(k.file, hot, stride, 1024);
	before = pages_cached(k.file, hot, stride, 1024);
	ck_assert_uint_ge(before, 1000);
	dd_whole(k.file);
	after = pages_cached(k.file, hot, stride, 1024);
	printf("keep: sparse hot set: %u of 1024 pages cached before dd, %u after; file %.1f MiB\n",
	       before, after, uot_mib((uint64_t)uot_resident(k.file, NULL)));
	ck_assert_msg(after >= before * 95 / 100, "sparse hot set dropped: %u -> %u pages", before,
		      after);
	/* Not kept by giving up: the rest of the stream is still dropped. */
	ck_assert_msg(uot_resident(k.file, NULL) <= (int64_t)(30 * UOT_MIB),
		      "the stream itself was not dropped: %.1f MiB cached",
		      uot_mib((uint64_t)uot_resident(k.file, NULL)));
}
END_TEST

START_TEST(test_hot_head_kept)
{
	const unsigned head = 8 * 256;	/* 8 MiB of pages */
	unsigned after;

	if (uot_skipped(NULL))
		return;
	ck_assert_int_eq(uot_make_file(k.file, 64 * UOT_MIB, 8), 0);
	warm_pages(k.file, 0, PAGE, head);
	ck_assert_uint_ge(pages_cached(k.file, 0, PAGE, head), head * 95 / 100);
	dd_whole(k.file);
	after = pages_cached(k.file, 0, PAGE, head);
	printf("keep: hot head: %.1f of 8.0 MiB cached after dd\n", after / 256.0);
	ck_assert_msg(after >= head * 95 / 100, "hot head dropped: %u of %u pages left", after,
		      head);
}
END_TEST

START_TEST(test_mixed_reads_drop_only_read)
{
	char helper[600];
	const char *argv[] = { helper, "mixed", k.file, NULL };
	const char *env[] = { "USEONCE_THRESHOLD=8M", NULL };
	const unsigned gap = 32 * 256;	/* [8, 40) MiB, never read */
	unsigned after;

	if (uot_skipped(NULL))
		return;
	uot_sfmt(helper, sizeof(helper), "%s/tests/review_probe", uot_build_dir());
	ck_assert_int_eq(uot_make_file(k.file, 64 * UOT_MIB, 9), 0);
	warm_pages(k.file, 12 * UOT_MIB, PAGE, gap - 4 * 256);
	run(argv, env);
	after = pages_cached(k.file, 12 * UOT_MIB, PAGE, gap - 4 * 256);
	printf("keep: mixed reads: %u of %u pages never read still cached\n", after,
	       gap - 4 * 256);
	ck_assert_msg(after >= (gap - 4 * 256) * 95 / 100, "ranges never read were dropped");
}
END_TEST

/* Three passes over 48 files of 128 KiB, each pass one process, with the record on. */
START_TEST(test_tree_reread_kept)
{
	char dir[600], path[700], list[48][700];
	const char *argv[52] = { "cat" };
	const char *env[] = { "USEONCE_REUSE=10m", k.xdg, NULL };
	unsigned i, pass, cached = 0;

	if (uot_skipped(NULL))
		return;
	uot_scratch_path(dir, sizeof(dir), "tree");
	uot_scratch_rm(dir);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	for (i = 0; i < 48; i++) {
		uot_sfmt(list[i], sizeof(list[i]), "%s/f%02u", dir, i);
		ck_assert_int_eq(uot_make_file(list[i], 128 * 1024, 100 + i), 0);
		argv[1 + i] = list[i];
	}
	argv[49] = NULL;
	for (pass = 0; pass < 3; pass++) {
		run(argv, env);
		for (cached = 0, i = 0; i < 48; i++)
			cached += (uint64_t)uot_resident(list[i], NULL) == 128 * 1024;
		printf("keep: tree pass %u: %u of 48 files fully cached after\n", pass + 1, cached);
	}
	(void)path;
	ck_assert_msg(cached >= 46, "files read again within USEONCE_REUSE were dropped: "
		      "%u of 48 cached after the third pass", cached);
	uot_scratch_rm(dir);
}
END_TEST

START_TEST(test_written_then_read_kept)
{
	char out[600];
	const char *wargv[] = { "dd", "if=/dev/zero", out, "bs=1M", "count=64", "status=none", NULL };
	const char *env[] = { "USEONCE_REUSE=10m", k.xdg, NULL };
	int64_t after;

	if (uot_skipped(NULL))
		return;
	unlink(k.file);
	uot_sfmt(out, sizeof(out), "of=%s", k.file);
	run(wargv, env);
	{
		const char *rargv[] = { "cat", k.file, NULL };

		run(rargv, env);
	}
	after = uot_resident(k.file, NULL);
	printf("keep: written then read: %.1f of 64 MiB cached after the read\n",
	       uot_mib((uint64_t)after));
	ck_assert_msg(after >= (int64_t)(60 * UOT_MIB), "a file written then read back soon was "
		      "dropped: %.1f MiB cached", uot_mib((uint64_t)after));
}
END_TEST

/*
 * The writer appends 1 MiB at a time, pausing every 4 MiB so that the
 * follower catches up with it (a writer far ahead leaves the follower's
 * probes in pages it wrote, which were kept already), and writes them to
 * disk there: a log's pages are long clean when its follower drops, and
 * dirty ones cannot be dropped (the test would pass by luck).
 */
static void append_paced(const char *path, unsigned mib)
{
	static char buf[1 << 20];
	const struct timespec pause = { 0, 5 * 1000 * 1000 };
	int fd = open(path, O_WRONLY | O_APPEND);
	unsigned i;

	if (fd < 0)
		_exit(1);
	memset(buf, 'x', sizeof(buf));
	/* The follower opens the empty file first. */
	nanosleep(&(struct timespec){ 0, 300 * 1000 * 1000 }, NULL);
	for (i = 0; i < mib; i++) {
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			_exit(1);
		if (i % 4 == 3 && (fdatasync(fd) != 0 || nanosleep(&pause, NULL) != 0))
			_exit(1);
	}
	_exit(close(fd) == 0 ? 0 : 1);
}

START_TEST(test_followed_file_kept)
{
	const unsigned mib = 256;
	char pid[32];
	const char *argv[] = { "tail", "-s", "0.05", "-c", "+1", "-f", "--pid", pid, k.file, NULL };
	int fd, status, p[2];
	pid_t child, writer;
	struct stat st;
	int64_t after;

	if (uot_skipped(NULL))
		return;
	unlink(k.file);
	fd = open(k.file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/*
	 * The writer is a grandchild, reaped by init: tail --pid waits for a
	 * process that is gone, and a child of ours would stay a zombie until
	 * our wait, after tail's.
	 */
	ck_assert_int_eq(pipe(p), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		writer = fork();
		if (!writer)
			append_paced(k.file, mib);
		_exit(write(p[1], &writer, sizeof(writer)) == sizeof(writer) ? 0 : 1);
	}
	close(p[1]);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_int_eq(read(p[0], &writer, sizeof(writer)), sizeof(writer));
	close(p[0]);
	ck_assert_int_gt(writer, 0);
	uot_sfmt(pid, sizeof(pid), "%d", (int)writer);
	run(argv, NULL);
	ck_assert_int_eq(stat(k.file, &st), 0);
	ck_assert_msg(st.st_size == (off_t)(mib * UOT_MIB), "the writer stopped at %lld bytes",
		      (long long)st.st_size);
	after = uot_resident(k.file, NULL);
	printf("keep: followed: %.1f of %u MiB an unguarded writer appended still cached after "
	       "tail -f\n", uot_mib((uint64_t)after), mib);
	ck_assert_msg(after >= (int64_t)(mib * UOT_MIB * 95 / 100), "the follower dropped the "
		      "writer's pages: %.1f of %u MiB cached", uot_mib((uint64_t)after), mib);
	unlink(k.file);
}
END_TEST

static void fresh_record(void)
{
	char rec[700];

	uot_sfmt(rec, sizeof(rec), "%s/useonce-streams", k.run);
	unlink(rec);
}

static void fixture(void)
{
	if (!uot_need_scratch())
		return;
	uot_scratch_path(k.file, sizeof(k.file), "file");
	uot_scratch_path(k.run, sizeof(k.run), "run");
	snprintf(k.xdg, sizeof(k.xdg), "XDG_RUNTIME_DIR=%s", k.run);
	if (mkdir(k.run, 0700) != 0)
		uot_skip("mkdir: %s", strerror(errno));
}

int main(void)
{
	Suite *s = suite_create("keep");
	TCase *tc = tcase_create("cached before");

	uot_suite_begin("keep", NULL);
	fixture();
	tcase_set_timeout(tc, 200);
	tcase_add_checked_fixture(tc, fresh_record, NULL);
	tcase_add_test(tc, test_sparse_hot_set_kept);
	tcase_add_test(tc, test_hot_head_kept);
	tcase_add_test(tc, test_mixed_reads_drop_only_read);
	tcase_add_test(tc, test_tree_reread_kept);
	tcase_add_test(tc, test_written_then_read_kept);
	tcase_add_test(tc, test_followed_file_kept);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
