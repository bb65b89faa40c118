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

static struct {
	char why[256];
	char file[512];
} e;

static void transcript(bool preload, char *out, size_t size)
{
	char path[600];
	FILE *f;
	size_t n;

	uot_scratch_path(path, sizeof(path), "transcript");
	ck_assert_int_eq(uot_sh("%s%s%s %s/tests/review_probe errno '%s' >'%s' 2>&1",
				preload ? "LD_PRELOAD='" : "", preload ? uot_preload() : "",
				preload ? "'" : "", uot_build_dir(), e.file, path), 0);
	f = fopen(path, "r");
	n = f ? fread(out, 1, size - 1, f) : 0;
	out[n] = '\0';
	if (f)
		fclose(f);
}

START_TEST(test_errno_kept_when_table_cannot_grow)
{
	char plain[256], with[256];

	if (e.why[0]) {
		printf("errno: skipped: %s\n", e.why);
		return;
	}
	transcript(false, plain, sizeof(plain));
	ck_assert_str_eq(plain, "read 3 errno 0\n");
	transcript(true, with, sizeof(with));
	ck_assert_str_eq(with, plain);
}
END_TEST

static void cleanup_at_exit(void)
{
	uot_scratch_remove();
}

int main(void)
{
	Suite *s = suite_create("errno");
	TCase *tc = tcase_create("errno on success");

	uot_sweep_stale();
	if (uot_scratch_create() != 0) {
		snprintf(e.why, sizeof(e.why), "%s", uot_why());
	} else {
		atexit(cleanup_at_exit);
		uot_scratch_path(e.file, sizeof(e.file), "in");
		if (uot_make_file(e.file, UOT_MIB, 6) != 0)
			snprintf(e.why, sizeof(e.why), "%s", uot_why());
	}
	tcase_add_test(tc, test_errno_kept_when_table_cannot_grow);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
