/*
 * The program's resource limits are its own: the library must not turn a
 * result the kernel gives under a limit into another (a short copy under a
 * file size limit into SIGXFSZ), nor take from the program what a limit
 * leaves it (a descriptor, under a tiny RLIMIT_NOFILE; the number a thread's
 * open gets).  Each case runs the
 * same command with and without the library and compares what it printed
 * and how it ended.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "testlib.h"
#include "uot_check.h"

static char src[512], dst[512], small[512];

/* Runs 'cmd' in sh with or without the library; its standard output into out. */
static int run(bool preload, const char *env, const char *cmd, char *out, size_t size)
{
	return uot_capture(preload, out, size, "%s sh -c '%s' 2>/dev/null", env, cmd);
}

static void same_both_ways(const char *what, const char *env, const char *cmd)
{
	char plain[4096], with[4096];
	int a, b;

	a = run(false, env, cmd, plain, sizeof(plain));
	b = run(true, env, cmd, with, sizeof(with));
	printf("limits: %s: status %#x without, %#x with\n", what, a, b);
	ck_assert_msg(a == b && !strcmp(plain, with),
		      "%s: without the library: status %#x, output:\n%s\nwith it: status %#x, "
		      "output:\n%s", what, a, plain, b, with);
}

/* 8 MiB limit, a 16 MiB copy from offset 0: the kernel copies 8 MiB and says so. */
START_TEST(test_file_size_limit_copy)
{
	char cmd[2048];

	if (uot_skipped("fsize"))
		return;
	uot_sfmt(cmd, sizeof(cmd), "ulimit -f 8192; exec %s/tests/fsize_copy %s %s 16",
		 uot_build_dir(), src, dst);
	same_both_ways("copy_file_range under ulimit -f 8 MiB", "USEONCE_WINDOW=2M", cmd);
	same_both_ways("copy_file_range under ulimit -f 8 MiB, default window", "", cmd);
}
END_TEST

/* Four descriptors: stdin, stdout, stderr and the file cat opens. */
START_TEST(test_descriptor_limit_trace)
{
	char cmd[1024];

	if (uot_skipped("nofile"))
		return;
	/* Nothing inherited above stderr: the limit leaves cat exactly one descriptor. */
	uot_sfmt(cmd, sizeof(cmd), "for fd in 3 4 5 6 7 8 9; do eval \"exec $fd>&-\"; done; "
		 "ulimit -n 4; exec cat %s", small);
	same_both_ways("cat under ulimit -n 4, USEONCE_TRACE=2", "USEONCE_TRACE=2", cmd);
	same_both_ways("cat under ulimit -n 4, USEONCE_STATS=2", "USEONCE_STATS=2", cmd);
}
END_TEST

/*
 * The descriptor numbers a program's threads get are the ones they get
 * without the library (POSIX: the lowest free), while the library asks
 * whether a memory limit came since, once a second, from the write path
 * of a temporary file it leaves to the kernel (memory mostly free).  It
 * opened five cgroup files a second for that, and 8-10 of a threaded
 * opener's numbers changed in 2 s.  The same helper at its descriptor
 * limit when the library first looks: it must look again, and leave a
 * later temporary file to the kernel as the bare run does (an EMFILE
 * there turned the rules off for good).  Where memory is not mostly free
 * both runs guard the files, and the output says so.
 */
/* False if not tried: the library guarded the file, where it opens descriptors of its own. */
static bool numbers_both_ways(const char *what, const char *args, bool may_skip)
{
	char cmd[1024], plain[4096], with[4096];
	int a, b;

	uot_sfmt(cmd, sizeof(cmd), "exec %s/tests/fd_numbers %s %s", uot_build_dir(),
		 uot_scratch(), args);
	b = run(true, "", cmd, with, sizeof(with));
	/* A guarded file is written back and dropped through descriptors of the library's own. */
	if (may_skip && strstr(with, "not cached")) {
		printf("limits: %s: not tried: the temporary file was guarded (memory is not "
		       "mostly free, or a limit)\n", what);
		return false;
	}
	a = run(false, "", cmd, plain, sizeof(plain));
	printf("limits: %s: without: %s", what, plain);
	printf("limits: %s: with:    %s", what, with);
	ck_assert_msg(a == b && !strcmp(plain, with), "%s: without the library: status %#x, "
		      "output:\n%s\nwith it: status %#x, output:\n%s", what, a, plain, b, with);
	return true;
}

START_TEST(test_descriptor_numbers_kept)
{
	if (uot_skipped("numbers"))
		return;
	/* The second only where the first saw the file left to the kernel. */
	if (numbers_both_ways("a threaded opener beside a temporary file", "200", true))
		numbers_both_ways("a temporary file after the first look met EMFILE", "64 emfile",
				  false);
}
END_TEST

static void fixture(void)
{
	if (!uot_need_scratch())
		return;
	uot_scratch_path(src, sizeof(src), "src");
	uot_scratch_path(dst, sizeof(dst), "dst");
	uot_scratch_path(small, sizeof(small), "small");
	if (uot_make_file(src, 40 * UOT_MIB, 5) != 0 || uot_sh("echo hello >'%s'", small) != 0)
		uot_skip("%s", uot_why());
}

int main(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("the program's limits");

	uot_suite_begin("limits", NULL);
	fixture();
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_file_size_limit_copy);
	tcase_add_test(tc, test_descriptor_limit_trace);
	tcase_add_test(tc, test_descriptor_numbers_kept);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
