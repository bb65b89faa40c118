/*
 * Programs that read through getc, getline or fgets (cut, uniq, sed,
 * paste, nl) and write through putc are guarded too: their reads happen
 * inside libc, at the refill of a stdio buffer (__uflow), or in getdelim
 * and fgets.  A 48 MiB text file read by each of them under the library
 * is dropped behind the reader, as it is for cat.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "uot_check.h"

#define FILE_MIB	48

static struct {
	char file[512];
	char out[512];
} t;

static const char *const progs[] = {
	"cut -c1-3 '@F' >/dev/null",
	"uniq '@F' >/dev/null",
	"sed -n '$p' '@F' >/dev/null",
	"paste '@F' /dev/null >/dev/null",
	"nl '@F' >/dev/null",
	/* Written through putc: the output is dropped behind too. */
	"sed 's/a/b/' '@F' >'@O'",
};

START_TEST(test_stdio_reader_guarded)
{
	const char *tokens[] = { "@F", "@O" }, *values[] = { t.file, t.out };
	char cmd[1024];
	double in_mib, out_mib;

	if (uot_skipped(NULL))
		return;
	ck_assert_int_eq(uot_make_cold(t.file), 0);
	uot_expand(cmd, sizeof(cmd), progs[_i], tokens, values, 2);
	ck_assert_int_eq(uot_sh("LD_PRELOAD='%s' %s", uot_preload(), cmd), 0);
	in_mib = uot_mib((uint64_t)uot_resident(t.file, NULL));
	out_mib = uot_mib((uint64_t)uot_resident(t.out, NULL));
	printf("stdio: %s: input %.1f of %d MiB cached after, output %.1f MiB\n", cmd, in_mib,
	       FILE_MIB, out_mib);
	ck_assert_msg(in_mib <= 16.0, "%s: its input was left cached: %.1f MiB", cmd, in_mib);
	ck_assert_msg(out_mib <= 16.0, "%s: its output was left cached: %.1f MiB", cmd, out_mib);
	unlink(t.out);
}
END_TEST

static void fixture(void)
{
	if (!uot_need_scratch())
		return;
	uot_scratch_path(t.file, sizeof(t.file), "text");
	uot_scratch_path(t.out, sizeof(t.out), "out");
	/* Lines that differ, so uniq and sed have work to do. */
	if (uot_sh("seq -f 'line %%.0f of a text file, a little longer than most' 1 2000000 "
		   "| head -c %dM >'%s'", FILE_MIB, t.file) != 0)
		uot_skip("cannot write the text file");
}

int main(void)
{
	Suite *s = suite_create("stdio");
	TCase *tc = tcase_create("stdio readers");

	uot_suite_begin("stdio", NULL);
	fixture();
	tcase_set_timeout(tc, 200);
	tcase_add_loop_test(tc, test_stdio_reader_guarded, 0, sizeof(progs) / sizeof(progs[0]));
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
