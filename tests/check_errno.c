/*
 * A call that succeeds leaves errno as libc left it, whatever the library
 * met on the way.  Under RLIMIT_AS no new mapping can be made: the
 * library's descriptor table cannot grow a chunk for the descriptor, and
 * a read of 3 bytes must still return 3 with errno untouched.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "uot_check.h"

static char file[512];

static void transcript(bool preload, char *out, size_t size)
{
	ck_assert_int_eq(uot_capture(preload, out, size, "%s/tests/review_probe errno '%s' 2>&1",
				     uot_build_dir(), file), 0);
}

START_TEST(test_errno_kept_when_table_cannot_grow)
{
	char plain[256], with[256];

	if (uot_skipped(NULL))
		return;
	transcript(false, plain, sizeof(plain));
	ck_assert_str_eq(plain, "read 3 errno 0\n");
	transcript(true, with, sizeof(with));
	ck_assert_str_eq(with, plain);
}
END_TEST

static void fixture(void)
{
	if (!uot_need_scratch())
		return;
	uot_scratch_path(file, sizeof(file), "in");
	if (uot_make_file(file, UOT_MIB, 6) != 0)
		uot_skip("%s", uot_why());
}

int main(void)
{
	Suite *s = suite_create("errno");
	TCase *tc = tcase_create("errno on success");

	uot_suite_begin("errno", NULL);
	fixture();
	tcase_add_test(tc, test_errno_kept_when_table_cannot_grow);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
