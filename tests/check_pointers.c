/*
 * Every pointer argument of every hook behaves as with libc alone: a bad
 * offset pointer given to copy_file_range, sendfile, sendfile64 or splice,
 * or a bad vector given to readv/preadv, is the kernel's EFAULT to report,
 * never a SIGSEGV in the library.  The review_probe helper makes each call
 * and prints what it returned; the transcripts without and with the
 * library must be the same, and the run with it must end normally.
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

static char file[512];

/* review_probe's transcript into out; its wait status. */
static int probe(bool preload, const char *args, char *out, size_t size)
{
	return uot_capture(preload, out, size, "%s timeout 60 %s/tests/review_probe %s 2>&1",
			   preload ? "USEONCE_THRESHOLD=2M USEONCE_WINDOW=2M" : "", uot_build_dir(),
			   args);
}

START_TEST(test_bad_offset_pointers_give_efault)
{
	char args[600], plain[4096], with[4096];
	int st;

	if (uot_skipped(NULL))
		return;
	uot_sfmt(args, sizeof(args), "pointers '%s'", file);
	ck_assert_int_eq(probe(false, args, plain, sizeof(plain)), 0);
	ck_assert_msg(strstr(plain, "copy_file_range-in -1 EFAULT"), "libc alone:\n%s", plain);
	st = probe(true, args, with, sizeof(with));
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "under the library the program died (status %#x):\n%s", st, with);
	ck_assert_msg(!strcmp(plain, with), "libc alone:\n%s\nwith the library:\n%s", plain, with);
}
END_TEST

static void fixture(void)
{
	if (!uot_need_scratch())
		return;
	uot_scratch_path(file, sizeof(file), "in");
	if (uot_make_file(file, 8 * UOT_MIB, 3) != 0)
		uot_skip("%s", uot_why());
}

int main(void)
{
	Suite *s = suite_create("pointers");
	TCase *tc = tcase_create("bad pointers");

	uot_suite_begin("pointers", NULL);
	fixture();
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bad_offset_pointers_give_efault);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
