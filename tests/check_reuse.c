/*
 * A file that comes back is not a stream: streamed again within
 * USEONCE_REUSE seconds, it is left to the kernel's cache.  The record of
 * recent streams is shared by the user's processes, so each case runs
 * real programs one after the other.  A damaged record changes nothing a
 * program sees.
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
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define FILE_MIB	128
#define DROPPED_MAX	(16 * UOT_MIB)
#define KEPT_MIN	(FILE_MIB * UOT_MIB * 95 / 100)

static struct {
	char file[512];
	char run[512];		/* the user's runtime directory, for the record */
	char record[600];
	char xdg[600];
	char reuse[64];
	char trace[600];
	char trace_env[620];
	char no_tmp[620];	/* TMPDIR where no private directory can be made */
} r;

/* cat FILE under the library with the record in r.run, in cg if not NULL; residency after. */
static uint64_t stream_in(const char *reuse_s, bool with_record, const struct uot_cgroup *cg)
{
	const char *argv[] = { "cat", r.file, NULL };
	const char *env[] = { r.reuse, r.trace_env, with_record ? r.xdg : "XDG_RUNTIME_DIR=",
			      with_record ? NULL : r.no_tmp, NULL };
	struct uot_cmd c = { .argv = argv, .preload = true, .env = env, .out = "/dev/null",
			     .cg = cg };
	struct uot_result res;
	int64_t resident;

	snprintf(r.reuse, sizeof(r.reuse), "USEONCE_REUSE=%s", reuse_s);
	ck_assert_msg(uot_run(&c, &res) == 0, "cat: %s", uot_why());
	ck_assert_msg(uot_exited_ok(res.status), "cat: %s", uot_status_str(res.status));
	resident = uot_resident(r.file, NULL);
	ck_assert_int_ge(resident, 0);
	return (uint64_t)resident;
}

static uint64_t stream(const char *reuse_s, bool with_record)
{
	return stream_in(reuse_s, with_record, NULL);
}

static void fresh(void)
{
	if (uot_skip_reason()[0])
		return;
	unlink(r.record);
	unlink(r.trace);
	ck_assert_int_eq(uot_make_cold(r.file), 0);
}

START_TEST(test_second_stream_left_cached)
{
	uint64_t first, second;

	if (uot_skipped(NULL))
		return;
	fresh();
	first = stream("600", true);
	second = stream("600", true);
	printf("reuse: streamed twice: resident after the first %.0f MiB, the second %.0f MiB\n",
	       uot_mib(first), uot_mib(second));
	ck_assert_msg(first <= DROPPED_MAX, "the first stream was not dropped: %.0f MiB",
		      uot_mib(first));
	ck_assert_msg(second >= KEPT_MIN, "the file came back but was dropped: %.0f MiB",
		      uot_mib(second));
}
END_TEST

START_TEST(test_too_late_is_a_new_stream)
{
	struct timespec nap = { 2, 200000000 };

	if (uot_skipped(NULL))
		return;
	fresh();
	ck_assert_uint_le(stream("1", true), DROPPED_MAX);
	nanosleep(&nap, NULL);
	ck_assert_uint_le(stream("1", true), DROPPED_MAX);
}
END_TEST

START_TEST(test_changed_file_is_a_new_stream)
{
	struct timespec later[2] = { { 0, UTIME_OMIT }, { 0, 0 } };

	if (uot_skipped(NULL))
		return;
	fresh();
	ck_assert_uint_le(stream("600", true), DROPPED_MAX);
	/* Same inode, new mtime: what was streamed is not what is read now. */
	clock_gettime(CLOCK_REALTIME, &later[1]);
	later[1].tv_sec += 5;
	ck_assert_int_eq(utimensat(AT_FDCWD, r.file, later, 0), 0);
	ck_assert_uint_le(stream("600", true), DROPPED_MAX);
}
END_TEST

/*
 * No runtime directory and nowhere private to make one (check_userdir has
 * the fallback, and what is never trusted): no record, each stream dropped.
 */
START_TEST(test_no_private_dir_no_record)
{
	char run_user[64];

	if (uot_skipped(NULL))
		return;
	snprintf(run_user, sizeof(run_user), "/run/user/%u", (unsigned)geteuid());
	if (access(run_user, F_OK) == 0) {
		printf("reuse: %s exists, the record lives there: case passed over\n", run_user);
		return;
	}
	fresh();
	ck_assert_uint_le(stream("600", false), DROPPED_MAX);
	ck_assert_uint_le(stream("600", false), DROPPED_MAX);
	ck_assert_int_ne(access(r.record, F_OK), 0);
}
END_TEST

/*
 * In a memory cgroup of 256 MiB (a container) the 128 MiB file does not
 * fit comfortably: kept, it would push out everything else the cgroup has
 * cached.  Streamed again, it is dropped again.
 */
START_TEST(test_too_big_for_its_cgroup)
{
	struct uot_cgroup cg;
	uint64_t second;

	if (uot_skipped(NULL))
		return;
	if (uot_cgroup_supported() != 0) {
		printf("reuse: no memory cgroups here (%s): case passed over\n", uot_why());
		return;
	}
	fresh();
	ck_assert_msg(uot_cgroup_create(&cg, 256 * UOT_MIB) == 0, "%s", uot_why());
	ck_assert_uint_le(stream_in("600", true, &cg), DROPPED_MAX);
	second = stream_in("600", true, &cg);
	uot_cgroup_remove(&cg);
	printf("reuse: in a 256 MiB cgroup, streamed again: resident after %.0f MiB\n",
	       uot_mib(second));
	ck_assert_msg(second <= DROPPED_MAX, "a file of half the cgroup's limit was kept: %.0f MiB",
		      uot_mib(second));
}
END_TEST

START_TEST(test_reuse_zero_turns_it_off)
{
	if (uot_skipped(NULL))
		return;
	fresh();
	ck_assert_uint_le(stream("0", true), DROPPED_MAX);
	ck_assert_uint_le(stream("0", true), DROPPED_MAX);
}
END_TEST

/*
 * _i: garbage, a file cut short, a symbolic link to elsewhere, a directory.
 * Programs run as before; a link is not followed, a bad record is rebuilt
 * or ignored.
 */
START_TEST(test_damaged_record)
{
	char target[620];
	int fd;

	if (uot_skipped(NULL))
		return;
	fresh();
	snprintf(target, sizeof(target), "%s/elsewhere", r.run);
	unlink(target);
	rmdir(r.record);
	switch (_i) {
	case 0:
		fd = open(r.record, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		ck_assert_int_ge(fd, 0);
		for (int k = 0; k < 4096; k++)
			ck_assert_int_eq(write(fd, "garbage!", 8), 8);
		close(fd);
		break;
	case 1:
		fd = open(r.record, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "x", 1), 1);
		close(fd);
		break;
	case 2:
		ck_assert_int_eq(symlink(target, r.record), 0);
		break;
	case 3:
		ck_assert_int_eq(mkdir(r.record, 0700), 0);
		break;
	}
	ck_assert_uint_le(stream("600", true), DROPPED_MAX);
	if (_i < 2)
		ck_assert_uint_ge(stream("600", true), KEPT_MIN);
	else
		ck_assert_uint_le(stream("600", true), DROPPED_MAX);
	ck_assert_msg(access(target, F_OK) != 0, "the record followed a symbolic link");
	unlink(r.record);
	rmdir(r.record);
}
END_TEST

static void prepare(void)
{
	/* The record and the trace sit in the scratch directory. */
	uot_suite_begin("reuse", NULL);
	if (!uot_need_scratch())
		return;
	uot_scratch_path(r.file, sizeof(r.file), "stream");
	uot_scratch_path(r.run, sizeof(r.run), "run");
	snprintf(r.record, sizeof(r.record), "%s/useonce-streams", r.run);
	snprintf(r.xdg, sizeof(r.xdg), "XDG_RUNTIME_DIR=%s", r.run);
	uot_scratch_path(r.trace, sizeof(r.trace), "trace");
	snprintf(r.trace_env, sizeof(r.trace_env), "USEONCE_TRACE=%s", r.trace);
	snprintf(r.no_tmp, sizeof(r.no_tmp), "TMPDIR=%s/missing/tmp", uot_scratch());
	if (mkdir(r.run, 0700) != 0 || uot_make_file(r.file, (uint64_t)FILE_MIB << 20, 5) != 0)
		uot_skip("cannot make the files: %s", strerror(errno));
}

int main(void)
{
	Suite *s = suite_create("reuse");
	TCase *tc = tcase_create("streamed again");

	prepare();
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_second_stream_left_cached);
	tcase_add_test(tc, test_too_late_is_a_new_stream);
	tcase_add_test(tc, test_changed_file_is_a_new_stream);
	tcase_add_test(tc, test_no_private_dir_no_record);
	tcase_add_test(tc, test_reuse_zero_turns_it_off);
	tcase_add_test(tc, test_too_big_for_its_cgroup);
	tcase_add_loop_test(tc, test_damaged_record, 0, 4);
	suite_add_tcase(s, tc);
	/* In-process: the record and the file are shared from case to case anyway. */
	return uot_check_run(s, true);
}
