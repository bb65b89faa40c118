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
#include <unistd.h>

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
 * An EMFILE when the library first asks whether a memory limit applies is
 * no answer: the helper fills its descriptor table before its first
 * window, then writes a second temporary file two seconds later, which the
 * library must leave to the kernel as the bare run does (an EMFILE there
 * turned the free-memory rules off for good).  Run, as root, in a cgroup
 * limited far above RAM (a make check started inside a limited cgroup
 * would have the rules off); first the helper's threaded case, to see the
 * rules apply here at all (memory mostly free): if the library guarded
 * that file, the EMFILE case cannot tell anything and is not tried.  The
 * threaded case's descriptor numbers are not compared: the library's
 * re-check opens cgroup files once a second, and a thread opening a file
 * at that moment can get another number (README, limits).
 */
static struct uot_cgroup open_cg;
static bool open_cg_ready;

static int run_unlimited(bool preload, const char *args, char *out, size_t size)
{
	return uot_capture(preload, out, size, "sh -c 'echo $$ >%s/cgroup.procs && "
			   "exec %s/tests/fd_numbers %s %s' 2>/dev/null", open_cg.path,
			   uot_build_dir(), uot_scratch(), args);
}

START_TEST(test_emfile_at_first_look_is_asked_again)
{
	char plain[4096], with[4096];
	int a, b;

	if (uot_skipped("numbers"))
		return;
	if (!open_cg_ready) {
		printf("limits: EMFILE at the first look: skipped: needs root and a memory cgroup\n");
		return;
	}
	b = run_unlimited(true, "200", with, sizeof(with));
	ck_assert_msg(b == 0, "fd_numbers: status %#x: %s", b, with);
	if (!strstr(with, "mostly cached")) {
		printf("limits: EMFILE at the first look: not tried: the file was guarded "
		       "(memory is not mostly free): %s", with);
		return;
	}
	a = run_unlimited(false, "64 emfile", plain, sizeof(plain));
	b = run_unlimited(true, "64 emfile", with, sizeof(with));
	printf("limits: EMFILE at the first look: without: %s", plain);
	printf("limits: EMFILE at the first look: with:    %s", with);
	ck_assert_msg(a == b && !strcmp(plain, with), "without the library: status %#x, "
		      "output:\n%s\nwith it: status %#x, output:\n%s", a, plain, b, with);
}
END_TEST

static void cleanup(void)
{
	if (open_cg_ready)
		uot_cgroup_remove(&open_cg);
}

static void fixture(void)
{
	if (!uot_need_scratch())
		return;
	uot_scratch_path(src, sizeof(src), "src");
	uot_scratch_path(dst, sizeof(dst), "dst");
	uot_scratch_path(small, sizeof(small), "small");
	if (uot_make_file(src, 40 * UOT_MIB, 5) != 0 || uot_sh("echo hello >'%s'", small) != 0)
		uot_skip("%s", uot_why());
	/* Limited far above RAM: no limit, as far as the library can tell. */
	if (geteuid() == 0 && uot_cgroup_supported() == 0 &&
	    uot_cgroup_create(&open_cg, 1ULL << 60) == 0)
		open_cg_ready = true;
}

int main(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("the program's limits");

	uot_suite_begin("limits", cleanup);
	fixture();
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_file_size_limit_copy);
	tcase_add_test(tc, test_descriptor_limit_trace);
	tcase_add_test(tc, test_emfile_at_first_look_is_asked_again);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
